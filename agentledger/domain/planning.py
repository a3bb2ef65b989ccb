"""Plan-then-execute: a work order's grants proposed from trusted input alone.

A planner sees what the issuer of a work order holds before the run starts — the request, the
principal, the references the pack resolved from the request and the agent profile — and nothing
else: no tool result, document or memory exists yet. What it proposes becomes the work order's
``grants``, the run's input, so they are fixed before any untrusted text reaches a packet, and
the gate (``governance.authorize``) holds every call to them. A tool result that names another
resource cannot widen them.

The planner is pluggable (``GrantPlanner``): a pack's scripted planner reads the request; a
model-backed one can propose the same shape wherever a model can run. Whatever it proposes is
checked here: only tools the profile grants, and a planner that fails refuses the work order
(``PlanRefused``) rather than leaving it unbounded.
"""

from __future__ import annotations

from typing import Protocol

from agentledger.domain._model import Frozen
from agentledger.domain.canonical import canonical_json
from agentledger.domain.manifest import AgentProfile
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkGrant, WorkOrder

__all__ = ["GrantPlanner", "PlanRefused", "PlanningInput", "narrowing_problem", "plan_grants"]


class PlanningInput(Frozen):
    """Everything a planner may see: trusted input only."""

    request_text: str
    principal: Principal
    references: dict[str, str]
    profile: AgentProfile


class GrantPlanner(Protocol):
    """Proposes the grants one work order needs (``WorkGrant``s, argument bounds included)."""

    def plan(self, given: PlanningInput) -> tuple[WorkGrant, ...]: ...


class PlanRefused(ValueError):
    """A planner proposed what the profile does not grant, or could not plan at all."""


def plan_grants(order: WorkOrder, profile: AgentProfile, planner: GrantPlanner) -> WorkOrder:
    """``order`` with the grants ``planner`` proposes from its trusted fields."""
    if profile.profile_id != order.agent_profile_id:
        raise PlanRefused(f"{order.agent_profile_id} is not planned with {profile.profile_id}")
    given = PlanningInput(
        request_text=order.request_text,
        principal=order.principal,
        references=order.references,
        profile=profile,
    )
    grants = planner.plan(given)
    granted = {g.name for g in profile.tool_grants}
    beyond = sorted({g.tool for g in grants} - granted)
    if beyond:
        raise PlanRefused(f"the plan names tools the profile does not grant: {beyond}")
    if len({g.tool for g in grants}) != len(grants):
        raise PlanRefused("the plan names a tool twice")
    return order.model_copy(update={"grants": tuple(sorted(grants, key=lambda g: g.tool))})


def narrowing_problem(
    sent: tuple[WorkGrant, ...] | None, planned: tuple[WorkGrant, ...]
) -> str | None:
    """Why the grants a work order was ``sent`` with are wider than those the worker
    ``planned`` from its trusted fields (``None``: they are the plan or narrower). A starter may
    drop a tool or an allowed value; it may not add a tool or unbound an argument."""
    if sent is None:
        return None
    plan = {g.tool: g for g in planned}
    for grant in sent:
        limit = plan.get(grant.tool)
        if limit is None:
            return f"the work order grants {grant.tool}, which its plan does not"
        own = {b.argument: set(map(_key, b.allowed)) for b in grant.bounds}
        for bound in limit.bounds:
            allowed = own.get(bound.argument)
            if allowed is None or not allowed <= set(map(_key, bound.allowed)):
                return (
                    f"the work order lets {grant.tool} take {bound.argument} values its plan "
                    "does not allow"
                )
    return None


def _key(value: object) -> bytes:
    """A hashable, type-exact stand-in for a JSON value (``1`` and ``True`` stay apart)."""
    return canonical_json(value)
