"""Who may write to a waiting run, and what a reply may be: pure rules the workflow applies in
its reply update (refusals are recorded, up to ``MAX_RECORDED_REPLY_REFUSALS``, then refused in
the update's validator so forged messages never fill history; a reply no pinned key signed is
always refused in the validator, unrecorded)."""

from __future__ import annotations

from collections.abc import Sequence

from agentledger.domain._model import Frozen
from agentledger.domain.events import ConversationClosed, ReplyAwaited, RunEvent
from agentledger.domain.graph import ConversationPolicy
from agentledger.domain.limits import MAX_REPLY_CHARS
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.state import WorkingState

MAX_RECORDED_REPLY_REFUSALS = 10
MAX_QUEUED_REPLIES = 5
"""Messages a working run holds for later (double-texting ``queue``/``interrupt``)."""


class ReplyRefusal(Frozen):
    reason_code: str
    detail: str


def reply_refusal(
    state: WorkingState, manifest: ExecutionManifest | None, principal_id: str, text: str
) -> ReplyRefusal | None:
    """Why this reply cannot be taken now (``None``: it can)."""
    if manifest is None or manifest.conversation is None:
        return ReplyRefusal(
            reason_code="not_a_conversation", detail="this run does not take replies"
        )
    if state.status != "running":
        return ReplyRefusal(reason_code="run_ended", detail=f"the run has {state.status}")
    if principal_id != state.principal_id:
        return ReplyRefusal(
            reason_code="not_the_requester",
            detail=f"only the run's requester may reply; {principal_id!r} is not",
        )
    refusal = _working_refusal(state, manifest.conversation)
    if refusal is not None:
        return refusal
    if not text.strip():
        return ReplyRefusal(reason_code="empty_reply", detail="the reply is empty")
    if len(text) > MAX_REPLY_CHARS:
        return ReplyRefusal(
            reason_code="reply_too_long",
            detail=f"the reply has {len(text)} characters; at most {MAX_REPLY_CHARS} are taken",
        )
    return None


def _working_refusal(state: WorkingState, policy: ConversationPolicy) -> ReplyRefusal | None:
    """A message while the run works (nothing awaited): refused under ``reject``, held under
    ``queue`` and ``interrupt`` while fewer than ``MAX_QUEUED_REPLIES`` wait."""
    if state.awaiting is not None:
        return None
    if policy.double_texting == "reject":
        return ReplyRefusal(
            reason_code="not_waiting",
            detail="the run is not waiting for a reply; try again when it asks or answers",
        )
    if len(state.queued_replies) >= MAX_QUEUED_REPLIES:
        return ReplyRefusal(
            reason_code="queue_full",
            detail=f"{MAX_QUEUED_REPLIES} messages already wait for the run to take them",
        )
    return None


def user_turns(state: WorkingState) -> int:
    return sum(1 for turn in state.conversation if turn.role == "user")


def ended(events: Sequence[RunEvent], run_id: str, status: str) -> str:
    """What a reply to a run that has ended is told: that it ended, and how its conversation
    closed if it did."""
    told = f"run {run_id} has ended ({status}); it takes no replies"
    how = closed(events)
    return f"{told}; {how}" if how else f"{told}; start a new one with `agentledger run`"


def closed(events: Sequence[RunEvent]) -> str | None:
    """How the run's conversation closed (``None``: it did not), with the closing message and,
    when nobody had answered it, the question left open."""
    close = next((e for e in reversed(events) if isinstance(e, ConversationClosed)), None)
    if close is None:
        return None
    asked = next(
        (e for e in reversed(events) if isinstance(e, ReplyAwaited) and e.seq < close.seq), None
    )
    left = (
        f'with its question unanswered ("{asked.message}")'
        if asked is not None and asked.reason == "question"
        else "after its last answer"
    )
    return (
        f"the conversation closed ({close.reason.replace('_', ' ')}) {left}; closing "
        f'message: "{close.message}"'
    )
