"""agentledger: the application shell (config, CLI, worker bootstrap, embedded dev stack)."""
