"""Which step runs next, and whether a model's decision fits the step it answered.

Pure functions of WorkingState, so the workflow, replay and compaction tests all agree on them.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from agentledger.domain._model import Frozen
from agentledger.domain.decisions import Answer, CallTool, ProceedToAnswer
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import Budget

CHOOSE_NEXT_ACTION = "choose_next_action"
DRAFT_ANSWER = "draft_answer"

_STEP_OUTPUTS: dict[str, tuple[type, ...]] = {
    CHOOSE_NEXT_ACTION: (CallTool, ProceedToAnswer),
    DRAFT_ANSWER: (Answer,),
}


class DecisionProblem(Frozen):
    reason_code: str
    detail: str


def next_step(state: WorkingState) -> str | None:
    """``None`` once the run has ended or is waiting on an action it proposed."""
    if state.status in ("completed", "failed") or state.phase == "acting":
        return None
    if state.phase == "answering":
        return DRAFT_ANSWER
    return CHOOSE_NEXT_ACTION


def check_decision(
    step: str,
    decision: CallTool | ProceedToAnswer | Answer,
    state: WorkingState,
    packet_ids: Collection[str],
) -> DecisionProblem | None:
    """Shape and grounding checks that do not need the authority gate."""
    allowed = _STEP_OUTPUTS.get(step, ())
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
    unproven = [
        op
        for op in decision.claimed_operation_ids
        if (done := state.receipt_for(op)) is None or done.status != "succeeded"
    ]
    if unproven:
        return DecisionProblem(
            reason_code="claims_unexecuted_action",
            detail=f"answer claims operations without a succeeded receipt: {', '.join(unproven)}",
        )
    return None


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
    )


def budget_exhausted(state: WorkingState, now: datetime) -> str | None:
    """Which of the run's limits is used up before another step (``None``: none is)."""
    if state.remaining_steps() <= 0:
        return "steps"
    if state.remaining_tokens() <= 0:
        return "tokens"
    if state.started_at is not None and now - state.started_at > timedelta(
        seconds=state.budget.wall_seconds
    ):
        return "wall_seconds"
    return None
