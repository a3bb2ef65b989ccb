"""Evaluating whole configurations side by side: suites, overrides, figures, significance.

Pure: the application shell (``agentledger.evaluation``) runs the work orders and reads the
events; everything here is a function of values.
"""

from agentledger.domain.evaluation.figures import ReceiptSeen, RunFigures, figures_of, problems
from agentledger.domain.evaluation.overrides import (
    BudgetOverride,
    ContextOverride,
    EvalConfig,
    EvalInputError,
    IdenticalConfigurations,
    Pricing,
    ProfileOverride,
    UnknownTool,
    apply_override,
    check_distinct,
    configuration_hash,
)
from agentledger.domain.evaluation.stats import BootstrapCI, SignTest, bootstrap_ci, sign_test
from agentledger.domain.evaluation.suite import (
    DenialPattern,
    EvalCase,
    Expectation,
    ReceiptPattern,
    Suite,
)

__all__ = [
    "BootstrapCI",
    "BudgetOverride",
    "ContextOverride",
    "DenialPattern",
    "EvalCase",
    "EvalConfig",
    "EvalInputError",
    "Expectation",
    "IdenticalConfigurations",
    "Pricing",
    "ProfileOverride",
    "ReceiptPattern",
    "ReceiptSeen",
    "RunFigures",
    "SignTest",
    "Suite",
    "UnknownTool",
    "apply_override",
    "bootstrap_ci",
    "check_distinct",
    "configuration_hash",
    "figures_of",
    "problems",
    "sign_test",
]
