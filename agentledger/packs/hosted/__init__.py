"""What the hosted-benchmark packs (τ², AgentDojo) share: the sandbox journal, a token budget
sized for their long policies, the scripted approver narrowed to a run's sandbox tenant, and how
far a scripted model has got."""

from __future__ import annotations

from pydantic import JsonValue

from agentledger.domain.context import SectionBudget, TokenBudget
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.hosted.journal import Journal

__all__ = ["HOSTED_TOKEN_BUDGET", "Journal", "progress", "sandbox_approver"]

HOSTED_TOKEN_BUDGET = TokenBudget(
    provider_limit=200_000,
    application_limit=60_000,
    safety_margin=2_000,
    sections={
        "instructions": SectionBudget(tokens=24_000, on_overflow="stop"),
        "working_state": SectionBudget(tokens=10_000, on_overflow="compact"),
        "evidence": SectionBudget(tokens=20_000, on_overflow="narrow_or_stop"),
        "conversation": SectionBudget(tokens=2_000, on_overflow="drop_oldest"),
        "memory": SectionBudget(tokens=1_000, on_overflow="drop_lowest_priority"),
    },
)


def sandbox_approver(approver: Principal, order: WorkOrder) -> Principal:
    """The scripted approver: a different principal, narrowed to the run's sandbox tenant."""
    return approver.model_copy(update={"tenant_id": order.principal.tenant_id})


def progress(view: dict[str, JsonValue]) -> int:
    """Settled proposals so far; compacted history still counts via ``*_earlier_count``."""
    total = 0
    for key in ("completed_actions", "rejected_options"):
        listed = view.get(key)
        earlier = view.get(f"{key}_earlier_count")
        total += len(listed) if isinstance(listed, list) else 0
        total += earlier if isinstance(earlier, int) else 0
    return total
