"""Which step runs next, and whether a model's decision fits the step it answered.

Generic over the pack's step graph (``domain.graph``); a manifest without one runs the two
legacy steps.

Pure functions of WorkingState, so the workflow, replay and compaction tests all agree on them.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from decimal import Decimal

from agentledger.domain._model import Frozen
from agentledger.domain.claims import unsupported_claims
from agentledger.domain.decisions import (
    Answer,
    AnyDecision,
    AskUser,
    CallTool,
    Proceed,
    ProceedToAnswer,
)
from agentledger.domain.graph import LEGACY_STEPS, StepGraph
from agentledger.domain.state import ENDED, WorkingState
from agentledger.domain.workorder import Budget

CHOOSE_NEXT_ACTION, DRAFT_ANSWER = LEGACY_STEPS

_SCHEMA_OUTPUTS: dict[str, tuple[type, ...]] = {
    "next_action": (CallTool, Proceed, ProceedToAnswer),
    "answer": (Answer,),
}
_LEGACY_OUTPUTS: dict[str, tuple[type, ...]] = {
    CHOOSE_NEXT_ACTION: (CallTool, ProceedToAnswer),
    DRAFT_ANSWER: (Answer,),
}


class DecisionProblem(Frozen):
    reason_code: str
    detail: str


def next_step(state: WorkingState, graph: StepGraph | None) -> str | None:
    """The step to run; ``None`` once the run has ended, or while it waits on an action it
    proposed or on its customer. ``graph=None``: a manifest frozen before step graphs."""
    if state.status in ENDED or state.phase == "acting":
        return None
    if state.awaiting is not None:
        return None
    if graph is not None:
        return state.at_step or graph.entry
    return DRAFT_ANSWER if state.phase == "answering" else CHOOSE_NEXT_ACTION


def settled_decision(
    step: str, decision: AnyDecision, graph: StepGraph | None
) -> AnyDecision | DecisionProblem:
    """The decision as it will be recorded: under a graph a ``proceed`` names the step it goes
    to (``proceed_to_answer`` and a ``proceed`` naming none take the step's first successor), so
    the fold follows the run without the graph. A transition the graph does not allow, or a
    question from a step that may not ask, is a problem."""
    if graph is None:
        return decision
    node = graph.node(step)
    if isinstance(decision, ProceedToAnswer | Proceed):
        target = getattr(decision, "to", None) or (node.next[0] if node.next else None)
        if target not in node.next:
            allowed = ", ".join(node.next) or "none"
            return DecisionProblem(
                reason_code="transition_not_allowed",
                detail=f"step {step} cannot proceed to {target}; allowed: {allowed}",
            )
        return Proceed(to=target, rationale=decision.rationale)
    if isinstance(decision, AskUser) and not node.ask_user:
        return DecisionProblem(
            reason_code="wrong_output_for_step", detail=f"step {step} cannot ask the user"
        )
    return decision


def check_decision(
    step: str,
    decision: AnyDecision,
    state: WorkingState,
    packet_ids: Collection[str],
    output_schema: str | None = None,
    bound_claims: bool = False,
) -> DecisionProblem | None:
    """Shape and grounding checks that do not need the authority gate. ``output_schema``: the
    step's, under a step graph (``None``: the legacy steps' fixed outputs); ``bound_claims``:
    the manifest's (``domain.claims``)."""
    if output_schema is None:
        allowed = _LEGACY_OUTPUTS.get(step, ())
    else:
        allowed = (*_SCHEMA_OUTPUTS.get(output_schema, ()), AskUser)
    if not isinstance(decision, allowed):
        return DecisionProblem(
            reason_code="wrong_output_for_step", detail=f"step {step} cannot return {decision.type}"
        )
    if not isinstance(decision, Answer):
        return None
    uncited = [s for s in decision.supporting_source_ids if s not in packet_ids]
    if uncited:
        return DecisionProblem(
            reason_code="citation_not_in_context",
            detail=f"cited sources not in the packet: {', '.join(uncited)}",
        )
    unsupported = unsupported_claims(decision, state, bound_claims)
    if unsupported is not None:
        return DecisionProblem(reason_code="unsupported_claim", detail=unsupported)
    return _unproven_operations(decision, state)


def _unproven_operations(decision: Answer, state: WorkingState) -> DecisionProblem | None:
    """An answer may claim only operations that have a succeeded receipt."""
    unproven = [
        op
        for op in decision.claimed_operation_ids
        if (done := state.receipt_for(op)) is None or done.status != "succeeded"
    ]
    if not unproven:
        return None
    return DecisionProblem(
        reason_code="claims_unexecuted_action",
        detail=f"answer claims operations without a succeeded receipt: {', '.join(unproven)}",
    )


def narrowed_budget(requested: Budget | None, ceiling: Budget) -> Budget:
    """The run's budget: the manifest's, narrowed by what the work order asked for.

    Whoever starts a run may narrow each limit; only the manifest can raise one.
    """
    if requested is None:
        return ceiling
    return Budget(
        steps=min(requested.steps, ceiling.steps),
        tool_calls=min(requested.tool_calls, ceiling.tool_calls),
        tokens=min(requested.tokens, ceiling.tokens),
        wall_seconds=min(requested.wall_seconds, ceiling.wall_seconds),
        max_cost=_lower(requested.max_cost, ceiling.max_cost),
    )


def _lower(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    return b if a is None else a if b is None else min(a, b)


def budget_exhausted(state: WorkingState, now: datetime) -> str | None:
    """Which of the run's limits is used up before another step (``None``: none is)."""
    if state.remaining_steps() <= 0:
        return "steps"
    if state.remaining_tokens() <= 0:
        return "tokens"
    if state.budget.max_cost is not None and state.used.cost >= state.budget.max_cost:
        return "cost"
    if state.started_at is not None and now - state.started_at > timedelta(
        seconds=state.budget.wall_seconds
    ):
        return "wall_seconds"
    return None
