"""The pure fold: ``evolve(state, event)`` and ``project(events)``.

Both share one mechanism: a private ``Draft`` takes the frozen state apart into mutable
containers, each handler applies one event, and the draft is frozen again. ``project`` freezes
once at the end, so folding n events costs O(n) rather than O(n) copies of a growing state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agentledger.domain._draft import (
    Draft,
    apply_approval_decision,
    apply_approval_requested,
    apply_authorised,
    apply_evidence,
    apply_receipt,
)
from agentledger.domain._draft_replies import apply_conversation
from agentledger.domain._draft_runs import apply_decision, apply_handoff, apply_instructed
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.errors import (
    EventAfterEnd,
    ForeignEvent,
    InconsistentEvent,
    OutOfOrderEvent,
)
from agentledger.domain.events import (
    ApprovalAttemptRefused,
    ApprovalExpired,
    ApprovalGranted,
    ApprovalNotificationFailed,
    ApprovalNotified,
    ApprovalRejected,
    ApprovalRequested,
    BudgetCharged,
    ContextPacketBuilt,
    ConversationClosed,
    DecisionRecorded,
    DecisionRejected,
    ErrorRecorded,
    EvidenceRecorded,
    HandoffCompleted,
    HandoffRefused,
    HandoffRequested,
    HistoryCompacted,
    MemoryProposed,
    ModelCalled,
    OperatorActionRefused,
    OperatorInstructed,
    ReplyAwaited,
    ReplyRefused,
    ReplyTaken,
    RunCancelled,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunForked,
    RunStarted,
    StepStarted,
    ToolCallAuthorised,
    ToolCallDenied,
    ToolReceiptRecorded,
    UserReplied,
)
from agentledger.domain.state import (
    UnresolvedError,
    WorkingState,
)
from agentledger.domain.window import bounded
from agentledger.domain.workorder import Budget


def evolve(state: WorkingState, event: RunEvent) -> WorkingState:
    """Apply one event. Raises a FoldError for a foreign, out-of-order or contradictory event."""
    draft = Draft(state)
    _apply(draft, event)
    return draft.freeze()


def project(events: Iterable[RunEvent], initial: WorkingState | None = None) -> WorkingState:
    """Fold a whole log (or the rest of one, from ``initial``).

    The loop is ``_apply`` inlined: the envelope's common case (this run, the next seq, not
    ended) is checked in one expression and the handler found by the event's exact type, since
    per-event overhead is most of what a fold costs beyond reading the events.
    """
    draft = Draft(initial or WorkingState())
    f, handlers, last = draft.f, _HANDLERS, draft.f["last_seq"]
    for event in events:
        seq = event.seq
        if seq != last + 1 or event.run_id != f["run_id"] or f["status"] in _ENDED_STATUS:
            _check_envelope(f, event)
        try:
            handler = handlers[type(event)]
        except KeyError:
            handler = _handler(event)
        handler(draft, event)
        f["last_seq"] = last = seq
    return draft.freeze()


def state_hash(state: WorkingState) -> str:
    """Digest of the typed facts; carried across compaction and continue-as-new.

    Fields still at their defaults are left out, so adding a field (with a default) to the state
    or to a record in it does not change the hash of a state recorded before the field existed.
    """
    return sha256_hex(state.model_dump(mode="json", exclude_defaults=True))


def _check_envelope(f: dict[str, Any], event: RunEvent) -> None:
    if isinstance(event, RunStarted | HistoryCompacted) and f["status"] == "new":
        return
    if event.run_id != f["run_id"]:
        raise ForeignEvent(
            f"event {event.kind} #{event.seq} belongs to run {event.run_id}, not {f['run_id']}"
        )
    if event.seq != f["last_seq"] + 1:
        raise OutOfOrderEvent(f"expected seq {f['last_seq'] + 1}, got {event.kind} #{event.seq}")
    if f["status"] in _ENDED_STATUS:
        raise EventAfterEnd(f"run {f['run_id']} already {f['status']}; got {event.kind}")


def _apply(d: Draft, event: RunEvent) -> None:
    _check_envelope(d.f, event)
    _handler(event)(d, event)
    d.f["last_seq"] = event.seq


def _handler(event: RunEvent) -> Callable[[Draft, Any], None]:
    """The handler of the event's class or, for a subclass, of its nearest listed base."""
    for cls in type(event).__mro__:
        if cls in _HANDLERS:
            return _HANDLERS[cls]
    raise TypeError(f"not a run event: {type(event).__name__}")


_ENDED = {"run_completed": "completed", "run_failed": "failed", "run_cancelled": "cancelled"}
_ENDED_STATUS = frozenset(_ENDED.values())


def _apply_packet(d: Draft, event: ContextPacketBuilt) -> None:
    d.f["last_packet_hash"] = event.packet_hash


def _apply_charge(d: Draft, event: BudgetCharged) -> None:
    d.steps += event.steps
    d.tool_calls += event.tool_calls
    d.tokens += event.tokens


def _apply_model_called(d: Draft, event: ModelCalled) -> None:
    if event.cost is not None:
        d.cost += event.cost


def _apply_rejected(d: Draft, event: DecisionRejected) -> None:
    d.refuse(event, option=event.option or event.step, settles=event.option)


def _apply_denied(d: Draft, event: ToolCallDenied) -> None:
    d.refuse(event, option=event.tool, settles=event.tool)


def _audit_only(d: Draft, event: RunEvent) -> None:
    """They change nothing the run knows."""


def _apply_ended(d: Draft, event: RunCompleted | RunFailed | RunCancelled) -> None:
    d.f.update(status=_ENDED[event.kind], phase="done")


def _apply_step(d: Draft, event: StepStarted) -> None:
    d.f["current_step"] = event.step
    d.steps += 1


def _apply_error(d: Draft, event: ErrorRecorded) -> None:
    d.f["unresolved_errors"][event.error_id] = UnresolvedError.model_construct(
        error_id=event.error_id,
        code=event.code,
        message=event.message,
        operation_id=event.operation_id,
    )


def _apply_started(d: Draft, event: RunStarted) -> None:
    if d.f["status"] != "new":
        raise InconsistentEvent("run_started twice")
    d.f.update(
        run_id=event.run_id,
        status="running",
        work_order=event.work_order,
        budget=event.work_order.budget or Budget(),
        policy_version=event.policy_version,
        started_at=event.recorded_at,
    )


def _apply_compaction(d: Draft, event: HistoryCompacted) -> None:
    """At the head of a compacted log, load the facts; inside a full log, check them. Either
    way, with a window the run goes on with the bounded state (``domain.window``)."""
    if d.f["status"] == "new":
        loaded = WorkingState.model_validate(event.facts)
        if event.window is not None and state_hash(loaded) != event.facts_hash:
            raise InconsistentEvent(f"history_compacted #{event.seq}: facts do not match")
        d.reset(loaded)
        return
    state = d.freeze()
    if event.window is not None:
        state = bounded(state, event.window)
    if event.through_seq != d.f["last_seq"] or state_hash(state) != event.facts_hash:
        raise InconsistentEvent(f"history_compacted #{event.seq} does not match the log")
    if event.window is not None:
        d.reset(state)


def _apply_forked(d: Draft, event: RunForked) -> None:
    """A fork goes on from its origin's state at the fork point, under its own run id."""
    if d.f["status"] != "running" or d.f["last_seq"] != 1:
        raise InconsistentEvent(f"run_forked #{event.seq} must follow the run's start")
    loaded = WorkingState.model_validate(event.facts)
    if loaded.run_id != event.origin_run_id or state_hash(loaded) != event.facts_hash:
        raise InconsistentEvent(f"run_forked #{event.seq}: facts do not match their hash")
    d.reset(loaded.model_copy(update={"run_id": event.run_id}))


_HANDLERS: dict[type, Callable[[Draft, Any], None]] = {
    RunStarted: _apply_started,
    StepStarted: _apply_step,
    ContextPacketBuilt: _apply_packet,
    BudgetCharged: _apply_charge,
    ModelCalled: _apply_model_called,
    DecisionRecorded: apply_decision,
    DecisionRejected: _apply_rejected,
    ToolCallAuthorised: apply_authorised,
    ToolCallDenied: _apply_denied,
    ToolReceiptRecorded: apply_receipt,
    EvidenceRecorded: apply_evidence,
    ApprovalRequested: apply_approval_requested,
    ApprovalGranted: apply_approval_decision,
    ApprovalRejected: apply_approval_decision,
    ApprovalExpired: apply_approval_decision,
    ApprovalAttemptRefused: _audit_only,
    ApprovalNotified: _audit_only,
    ApprovalNotificationFailed: _audit_only,
    MemoryProposed: _audit_only,
    OperatorActionRefused: _audit_only,
    OperatorInstructed: apply_instructed,
    ErrorRecorded: _apply_error,
    HistoryCompacted: _apply_compaction,
    RunForked: _apply_forked,
    ReplyAwaited: apply_conversation,
    UserReplied: apply_conversation,
    ReplyRefused: apply_conversation,
    ConversationClosed: apply_conversation,
    ReplyTaken: apply_conversation,
    HandoffRequested: apply_handoff,
    HandoffCompleted: apply_handoff,
    HandoffRefused: apply_handoff,
    RunCompleted: _apply_ended,
    RunFailed: _apply_ended,
    RunCancelled: _apply_ended,
}
"""The fold table: each event class and its handler, looked up by exact type (one dict probe
instead of a ``match`` trying class patterns in turn). A test checks that it covers the whole
``RunEvent`` union, which the ``match``'s ``assert_never`` used to check."""
