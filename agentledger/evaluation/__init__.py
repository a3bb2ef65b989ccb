"""``agentledger eval``: whole configurations compared on the same work orders (seed 003).

``sources`` loads a suite (shipped or a file) and its pack's hooks, ``hosted`` makes τ² and
AgentDojo suites, ``configs`` resolves configuration files into overlay packs, ``runner`` runs
the work orders through Temporal on the eval's own ledger, ``run`` runs one eval end to end,
``report`` compares them, ``render`` and ``html`` (with ``svg``) show the comparison;
``agentledger.cli.eval`` is the CLI's entry and the only part that prints.
"""

from agentledger.evaluation.configs import Configuration, load_config, resolve_pair
from agentledger.evaluation.report import EvalReport, RunRow
from agentledger.evaluation.run import EvalStarted, run_eval
from agentledger.evaluation.sources import SHIPPED, SuiteSource, load_suite

__all__ = [
    "SHIPPED",
    "Configuration",
    "EvalReport",
    "EvalStarted",
    "RunRow",
    "SuiteSource",
    "load_config",
    "load_suite",
    "resolve_pair",
    "run_eval",
]
