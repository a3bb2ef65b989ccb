"""The pure fold: ``evolve(state, event)`` and ``project(events)``.

Both share one mechanism: a private ``_Draft`` takes the frozen state apart into mutable
containers, each handler applies one event, and the draft is frozen again. ``project`` freezes
once at the end, so folding n events costs O(n) rather than O(n) copies of a growing state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, assert_never

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
    ApprovalRejected,
    ApprovalRequested,
    BudgetCharged,
    ContextPacketBuilt,
    DecisionRecorded,
    DecisionRejected,
    ErrorRecorded,
    EvidenceRecorded,
    HistoryCompacted,
    MemoryProposed,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunStarted,
    StepStarted,
    ToolCallAuthorised,
    ToolCallDenied,
    ToolReceiptRecorded,
)
from agentledger.domain.state import (
    ApprovalOutcome,
    BudgetUsed,
    CompletedAction,
    DecisionNote,
    EvidenceRef,
    InFlightCall,
    Observation,
    PendingApproval,
    RejectedOption,
    UnresolvedError,
    WorkingState,
    bounded_summary,
    fact_key,
)
from agentledger.domain.workorder import Budget

_TUPLE_FIELDS = ("completed_actions", "decisions", "rejected_options", "evidence")
_DICT_FIELDS = (
    "verified_facts",
    "resources",
    "observations",
    "in_flight",
    "source_versions",
    "pending_approvals",
    "approvals",
    "unresolved_errors",
)


class _Draft:
    """Mutable working copy of a WorkingState; containers are copied once, on first use."""

    __slots__ = ("_evidence_keys", "f", "steps", "tokens", "tool_calls")

    def __init__(self, state: WorkingState) -> None:
        f = dict(state.__dict__)
        self.steps, self.tool_calls, self.tokens = (
            state.used.steps,
            state.used.tool_calls,
            state.used.tokens,
        )
        self._evidence_keys: set[tuple[str, str]] | None = None
        for name in _TUPLE_FIELDS:
            f[name] = list(f[name])
        for name in _DICT_FIELDS:
            f[name] = dict(f[name])
        self.f: dict[str, Any] = f

    def freeze(self) -> WorkingState:
        f = dict(self.f)
        f["used"] = BudgetUsed.model_construct(
            steps=self.steps, tool_calls=self.tool_calls, tokens=self.tokens
        )
        for name in _TUPLE_FIELDS:
            f[name] = tuple(f[name])
        return WorkingState.model_construct(**f)

    def used(self, steps: int = 0, tool_calls: int = 0, tokens: int = 0) -> None:
        self.steps += steps
        self.tool_calls += tool_calls
        self.tokens += tokens

    def first_evidence(self, source_id: str, revision: str) -> bool:
        """True the first time a (source, revision) is seen; O(1) instead of a list scan."""
        if self._evidence_keys is None:
            self._evidence_keys = {(e.source_id, e.revision) for e in self.f["evidence"]}
        if (source_id, revision) in self._evidence_keys:
            return False
        self._evidence_keys.add((source_id, revision))
        return True

    def reject(self, seq: int, option: str, reason_code: str, detail: str) -> None:
        step = self.f["current_step"] or ""
        self.f["rejected_options"].append(
            RejectedOption.trusted(
                seq=seq, step=step, option=option, reason_code=reason_code, detail=detail
            )
        )

    def settle_proposal(self, tool: str) -> None:
        """The proposed next action was carried out or refused: back to answering."""
        proposal = self.f["proposed_action"]
        if proposal is not None and proposal.tool == tool:
            self.f["proposed_action"] = None
            self.f["phase"] = "answering"


def evolve(state: WorkingState, event: RunEvent) -> WorkingState:
    """Apply one event. Raises a FoldError for a foreign, out-of-order or contradictory event."""
    draft = _Draft(state)
    _apply(draft, event)
    return draft.freeze()


def project(events: Iterable[RunEvent], initial: WorkingState | None = None) -> WorkingState:
    """Fold a whole log (or the rest of one, from ``initial``)."""
    draft = _Draft(initial or WorkingState())
    for event in events:
        _apply(draft, event)
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
    if f["status"] in ("completed", "failed"):
        raise EventAfterEnd(f"run {f['run_id']} already {f['status']}; got {event.kind}")


def _apply(d: _Draft, event: RunEvent) -> None:
    f = d.f
    _check_envelope(f, event)
    match event:
        case RunStarted():
            if f["status"] != "new":
                raise InconsistentEvent("run_started twice")
            f.update(
                run_id=event.run_id,
                status="running",
                work_order=event.work_order,
                budget=event.work_order.budget or Budget(),
                policy_version=event.policy_version,
                started_at=event.recorded_at,
            )
        case StepStarted():
            f["current_step"] = event.step
            d.used(steps=1)
        case ContextPacketBuilt():
            f["last_packet_hash"] = event.packet_hash
        case BudgetCharged():
            d.used(steps=event.steps, tool_calls=event.tool_calls, tokens=event.tokens)
        case DecisionRecorded():
            _apply_decision(d, event)
        case DecisionRejected():
            d.reject(event.seq, event.option or event.step, event.reason_code, event.detail)
            d.settle_proposal(event.option)
        case ToolCallAuthorised():
            _apply_authorised(d, event)
        case ToolCallDenied():
            d.reject(event.seq, event.tool, event.reason_code, event.detail)
            d.settle_proposal(event.tool)
        case ToolReceiptRecorded():
            _apply_receipt(d, event)
        case EvidenceRecorded():
            _apply_evidence(d, event)
        case ApprovalRequested():
            f["pending_approvals"][event.approval_id] = PendingApproval.model_construct(
                approval_id=event.approval_id,
                operation_id=event.operation_id,
                proposal=event.proposal,
                proposal_digest=event.proposal_digest,
                requested_by=event.requested_by,
                approver_role=event.approver_role,
                expires_at=event.expires_at,
                elicitation=event.elicitation,
                eligible_approvers=event.eligible_approvers,
            )
        case ApprovalGranted() | ApprovalRejected() | ApprovalExpired():
            _apply_approval_decision(d, event)
        case ApprovalAttemptRefused() | MemoryProposed():
            pass  # audit-only: they change nothing the run knows
        case ErrorRecorded():
            f["unresolved_errors"][event.error_id] = UnresolvedError.model_construct(
                error_id=event.error_id,
                code=event.code,
                message=event.message,
                operation_id=event.operation_id,
            )
        case HistoryCompacted():
            _apply_compaction(d, event)
        case RunCompleted():
            f.update(status="completed", phase="done")
        case RunFailed():
            f.update(status="failed", phase="done")
        case _:
            assert_never(event)
    f["last_seq"] = event.seq


def _apply_decision(d: _Draft, event: DecisionRecorded) -> None:
    decision = event.decision
    summary: str = decision.type
    if decision.type == "call_tool":
        summary = f"call {decision.proposal.tool}"
    elif decision.type == "proceed_to_answer":
        d.f["phase"] = "answering"
    else:
        d.f["last_answer"] = decision
        if decision.proposed_next_action is not None:
            d.f["proposed_action"] = decision.proposed_next_action
            d.f["phase"] = "acting"
            summary = f"answer; propose {decision.proposed_next_action.tool}"
    d.f["decisions"].append(
        DecisionNote.trusted(
            seq=event.seq, step=event.step, decision_type=decision.type, summary=summary
        )
    )


def _apply_authorised(d: _Draft, event: ToolCallAuthorised) -> None:
    f = d.f
    if event.operation_id in f["in_flight"]:
        raise InconsistentEvent(f"operation {event.operation_id} is already in flight")
    f["in_flight"][event.operation_id] = InFlightCall.trusted(
        operation_id=event.operation_id,
        tool=event.tool,
        arguments=event.arguments,
        arguments_digest=event.arguments_digest,
        idempotency_key=event.idempotency_key,
        approval_id=event.approval_id,
    )
    if event.approval_id is not None:
        outcome: ApprovalOutcome | None = f["approvals"].get(event.approval_id)
        if outcome is None or outcome.decision != "granted" or outcome.used:
            raise InconsistentEvent(f"approval {event.approval_id} is not a usable grant")
        f["approvals"][event.approval_id] = outcome.model_copy(update={"used": True})
    d.used(tool_calls=1)


def _apply_receipt(d: _Draft, event: ToolReceiptRecorded) -> None:
    f, r = d.f, event.receipt
    call: InFlightCall | None = f["in_flight"].get(r.operation_id)
    if call is None:
        raise InconsistentEvent(f"receipt for {r.operation_id}, which is not in flight")
    for fact in r.facts:
        f["verified_facts"][fact_key(fact.resource_id, fact.name)] = fact
    for resource in r.resources:
        f["resources"][resource.resource_id] = resource
    if r.status == "in_doubt":
        return  # still in flight until reconciliation settles it
    f["observations"][r.tool] = Observation.trusted(
        operation_id=r.operation_id,
        tool=r.tool,
        status=r.status,
        model_view=r.model_view,
        observed_at=r.observed_at,
    )
    del f["in_flight"][r.operation_id]
    f["completed_actions"].append(
        CompletedAction.trusted(
            operation_id=r.operation_id,
            tool=r.tool,
            status=r.status,
            receipt_id=r.receipt_id,
            idempotency_key=r.idempotency_key,
            arguments_digest=call.arguments_digest,
            summary=bounded_summary(r.user_view),
        )
    )
    d.settle_proposal(r.tool)


def _apply_evidence(d: _Draft, event: EvidenceRecorded) -> None:
    f = d.f
    if not d.first_evidence(event.source_id, event.revision):
        return
    f["evidence"].append(
        EvidenceRef.trusted(
            source_id=event.source_id,
            revision=event.revision,
            content_hash=event.content_hash,
            trust=event.trust,
            title=event.title,
            text=event.text,
            operation_id=event.operation_id,
        )
    )
    f["source_versions"][event.source_id.split("#", 1)[0]] = event.revision


def _apply_approval_decision(
    d: _Draft, event: ApprovalGranted | ApprovalRejected | ApprovalExpired
) -> None:
    f = d.f
    pending: PendingApproval | None = f["pending_approvals"].pop(event.approval_id, None)
    if pending is None:
        raise InconsistentEvent(f"approval {event.approval_id} is not pending")
    if isinstance(event, ApprovalGranted) and event.proposal_digest != pending.proposal_digest:
        raise InconsistentEvent(f"approval {event.approval_id} granted for another proposal")
    decision: Literal["granted", "rejected", "expired"] = (
        "granted"
        if event.kind == "approval_granted"
        else "rejected"
        if event.kind == "approval_rejected"
        else "expired"
    )
    f["approvals"][event.approval_id] = ApprovalOutcome.model_construct(
        approval_id=event.approval_id,
        operation_id=pending.operation_id,
        proposal_digest=pending.proposal_digest,
        decision=decision,
        decided_by=getattr(event, "approver", None),
        reason=getattr(event, "reason", ""),
        expires_at=pending.expires_at,
        content=getattr(event, "content", None),
    )
    if decision != "granted":
        d.reject(
            event.seq,
            pending.proposal.tool,
            f"approval_{decision}",
            getattr(event, "reason", "") or f"approval {decision}",
        )
        d.settle_proposal(pending.proposal.tool)


def _apply_compaction(d: _Draft, event: HistoryCompacted) -> None:
    """At the head of a compacted log, load the facts; inside a full log, check them."""
    if d.f["status"] == "new":
        loaded = _Draft(WorkingState.model_validate(event.facts))
        d.f.update(loaded.f)
        d.steps, d.tool_calls, d.tokens = loaded.steps, loaded.tool_calls, loaded.tokens
        d._evidence_keys = None
        return
    if event.through_seq != d.f["last_seq"] or state_hash(d.freeze()) != event.facts_hash:
        raise InconsistentEvent(f"history_compacted #{event.seq} does not match the log")
