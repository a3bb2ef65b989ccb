"""Compaction at completed-operation boundaries (seed 000: store typed facts, then shorten).

``can_compact`` is the only gate: no tool call in flight (a retrieval is a tool call), no approval
pending, no proposed action awaiting authorisation. Anywhere else ``compact`` refuses, so a
history can never be shortened in the middle of an operation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentledger.domain.errors import DomainError
from agentledger.domain.events import HistoryCompacted
from agentledger.domain.fold import state_hash
from agentledger.domain.state import WorkingState
from agentledger.domain.window import bounded

MAX_CARRIED_BYTES = 1_000_000
"""The largest state a run carries into continue-as-new, or sends to a model step (its latest
entries, ``context_state``): half Temporal's 2 MB payload limit, leaving room for the events
that travel with it. Beyond it a run cannot go on safely (the server would refuse the payload and
the workflow task would fail again and again), so it ends, recorded as ``state_too_large``."""


class CompactionNotAllowed(DomainError):
    code = "compaction_not_allowed"


def carried_size_problem(state_bytes: int, limit: int = MAX_CARRIED_BYTES) -> str | None:
    """Why a state of ``state_bytes`` cannot be carried on (``None`` when it can)."""
    if state_bytes <= limit:
        return None
    return (
        f"the run's state is {state_bytes} bytes, over the {limit} a run can carry into a step "
        "or across continue-as-new (half Temporal's 2 MB payload limit); every event is in the "
        "ledger"
    )


def can_compact(state: WorkingState) -> bool:
    return (
        state.status == "running"
        and not state.in_flight
        and not state.pending_approvals
        and state.proposed_action is None
        and state.phase != "acting"
        and not state.handoff_running()
    )


def compact(
    state: WorkingState,
    *,
    recorded_at: datetime,
    manifest_hash: str,
    summary: str = "",
    window: int | None = None,
) -> HistoryCompacted:
    """The event that replaces events 1..state.last_seq with their exact typed facts.

    With a ``window`` the facts are those of the state bounded to it (``domain.window``), which
    is the state the run goes on with: the fold applies the same cut at this event.
    ``summary`` is optional prose for people, labelled ``model_summary`` and never read as fact.
    """
    if not can_compact(state):
        raise CompactionNotAllowed(
            f"run {state.run_id} is mid-operation at #{state.last_seq} "
            f"(in flight: {sorted(state.in_flight)}, pending: {sorted(state.pending_approvals)})"
        )
    kept = state if window is None else bounded(state, window)
    facts: dict[str, Any] = kept.facts()
    return HistoryCompacted(
        run_id=state.run_id,
        seq=state.last_seq + 1,
        recorded_at=recorded_at,
        manifest_hash=manifest_hash,
        through_seq=state.last_seq,
        facts=facts,
        facts_hash=state_hash(kept),
        summary=summary,
        window=window,
    )


def context_state(state: WorkingState, keep_last: int = 25) -> WorkingState:
    """The state a model step is sent: every current obligation, only the latest history.

    Pending approvals, facts and errors are kept whole; long histories (receipts, decisions,
    refusals, evidence, conversation turns) are cut to their latest entries, so the payload of
    a step stays flat however long the run grows. The token ids of the assertions the run
    accepted are the workflow's to check, not the model's to see. The full state stays in the
    workflow and the ledger.
    """
    return state.model_copy(
        update={
            "completed_actions": state.completed_actions[-keep_last:],
            "decisions": state.decisions[-keep_last:],
            "rejected_options": state.rejected_options[-keep_last:],
            "evidence": state.evidence[-2 * keep_last :],
            "conversation": state.conversation[-2 * keep_last :],
            "spent_assertions": {},
        }
    )
