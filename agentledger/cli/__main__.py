"""``python -m agentledger.cli``: the same as the ``agentledger`` console script."""

from agentledger.cli.main import entrypoint

if __name__ == "__main__":
    entrypoint()
