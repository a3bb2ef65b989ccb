"""The fold's working copy of a state, and its handlers for tool calls and approvals.

Private to ``domain.fold``: a ``Draft`` takes a frozen WorkingState apart into mutable containers
(copied once), handlers apply one event each, and ``freeze`` builds the state again.

Records that a later event of the same fold usually replaces are built only at ``freeze``: an
in-flight call (gone when its receipt arrives) is kept as its ``ToolCallAuthorised`` event and a
tool's latest observation as its ``Receipt``. The events were validated when they were read, so
``freeze`` builds the records with ``trusted`` from their fields, exactly as before.
"""

from __future__ import annotations

from typing import Any, Literal

from agentledger.domain.assertions import spent_after
from agentledger.domain.errors import InconsistentEvent
from agentledger.domain.events import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    DecisionRejected,
    EvidenceRecorded,
    ToolCallAuthorised,
    ToolCallDenied,
    ToolReceiptRecorded,
)
from agentledger.domain.state import (
    ApprovalOutcome,
    ApprovalRequest,
    BudgetUsed,
    CompletedAction,
    EvidenceRef,
    InFlightCall,
    Observation,
    RejectedOption,
    WorkingState,
    bounded_summary,
    fact_key,
)
from agentledger.domain.tools import Receipt

_TUPLE_FIELDS = ("completed_actions", "decisions", "rejected_options", "evidence", "conversation")
_DICT_FIELDS = (
    "verified_facts",
    "resources",
    "observations",
    "in_flight",
    "source_versions",
    "pending_approvals",
    "approvals",
    "unresolved_errors",
    "handoffs",
)


class Draft:
    """Mutable working copy of a WorkingState; containers are copied once, on first use."""

    __slots__ = ("_evidence_keys", "cost", "f", "steps", "tokens", "tool_calls")

    def __init__(self, state: WorkingState) -> None:
        f = dict(state.__dict__)
        self.steps, self.tool_calls, self.tokens = (
            state.used.steps,
            state.used.tool_calls,
            state.used.tokens,
        )
        self.cost = state.used.cost
        self._evidence_keys: set[tuple[str, str]] | None = None
        for name in _TUPLE_FIELDS:
            f[name] = list(f[name])
        for name in _DICT_FIELDS:
            f[name] = dict(f[name])
        self.f: dict[str, Any] = f

    def reset(self, state: WorkingState) -> None:
        """Start over from ``state`` (a compaction's), in place: ``project`` holds ``self.f``."""
        fresh = Draft(state)
        self.f.update(fresh.f)
        self.steps, self.tool_calls, self.tokens = fresh.steps, fresh.tool_calls, fresh.tokens
        self.cost = fresh.cost
        self._evidence_keys = None

    def freeze(self) -> WorkingState:
        f = dict(self.f)
        f["used"] = BudgetUsed.trusted(
            steps=self.steps, tool_calls=self.tool_calls, tokens=self.tokens, cost=self.cost
        )
        for name in _TUPLE_FIELDS:
            f[name] = tuple(f[name])
        f["in_flight"] = {
            k: v if type(v) is InFlightCall else _in_flight_call(v)
            for k, v in f["in_flight"].items()
        }
        f["observations"] = {
            k: v if type(v) is Observation else _observation(v)
            for k, v in f["observations"].items()
        }
        return WorkingState.trusted(**f)  # every field is here: it began as a state's own

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

    def refuse(self, event: DecisionRejected | ToolCallDenied, option: str, settles: str) -> None:
        """A rejected decision or a denied call: recorded, and the proposal it settles."""
        self.reject(event.seq, option, event.reason_code, event.detail)
        self.settle_proposal(settles)

    def settle_proposal(self, tool: str) -> None:
        """The proposed next action was carried out or refused: back to answering."""
        proposal = self.f["proposed_action"]
        if proposal is not None and proposal.tool == tool:
            self.f["proposed_action"] = None
            self.f["phase"] = "answering"


def _in_flight_call(event: ToolCallAuthorised) -> InFlightCall:
    return InFlightCall.trusted(
        operation_id=event.operation_id,
        tool=event.tool,
        arguments=event.arguments,
        arguments_digest=event.arguments_digest,
        idempotency_key=event.idempotency_key,
        approval_id=event.approval_id,
        resource_id=event.resource_id,
    )


def _observation(r: Receipt) -> Observation:
    return Observation.trusted(
        operation_id=r.operation_id,
        tool=r.tool,
        status=r.status,
        model_view=r.model_view,
        observed_at=r.observed_at,
    )


def apply_approval_requested(d: Draft, event: ApprovalRequested) -> None:
    d.f["pending_approvals"][event.approval_id] = event.request()


def apply_authorised(d: Draft, event: ToolCallAuthorised) -> None:
    f = d.f
    if event.operation_id in f["in_flight"]:
        raise InconsistentEvent(f"operation {event.operation_id} is already in flight")
    f["in_flight"][event.operation_id] = event  # an InFlightCall at freeze
    if event.approval_id is not None:
        outcome: ApprovalOutcome | None = f["approvals"].get(event.approval_id)
        if outcome is None or outcome.decision != "granted" or outcome.used:
            raise InconsistentEvent(f"approval {event.approval_id} is not a usable grant")
        f["approvals"][event.approval_id] = outcome.model_copy(update={"used": True})
    d.tool_calls += 1


def apply_receipt(d: Draft, event: ToolReceiptRecorded) -> None:
    f, r = d.f, event.receipt
    call: InFlightCall | ToolCallAuthorised | None = f["in_flight"].get(r.operation_id)
    if call is None:
        raise InconsistentEvent(f"receipt for {r.operation_id}, which is not in flight")
    for fact in r.facts:
        f["verified_facts"][fact_key(fact.resource_id, fact.name)] = fact
    for resource in r.resources:
        f["resources"][resource.resource_id] = resource
    if r.status == "in_doubt":
        return  # still in flight until reconciliation settles it
    f["observations"][r.tool] = r  # an Observation at freeze
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
            resource_id=call.resource_id,
        )
    )
    d.settle_proposal(r.tool)


def apply_evidence(d: Draft, event: EvidenceRecorded) -> None:
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


def apply_approval_decision(
    d: Draft, event: ApprovalGranted | ApprovalRejected | ApprovalExpired
) -> None:
    f = d.f
    pending: ApprovalRequest | None = f["pending_approvals"].pop(event.approval_id, None)
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
    edit = getattr(event, "edit", None)
    f["approvals"][event.approval_id] = ApprovalOutcome.model_construct(
        approval_id=event.approval_id,
        operation_id=pending.operation_id,
        proposal_digest=pending.proposal_digest if edit is None else edit.approved_digest,
        decision=decision,
        decided_by=getattr(event, "approver", None),
        reason=getattr(event, "reason", ""),
        expires_at=pending.expires_at,
        content=getattr(event, "content", None),
        edit=edit,
    )
    spent = spent_after(f["spent_assertions"], getattr(event, "assertion", None), event.recorded_at)
    f["spent_assertions"] = spent
    if decision != "granted":
        d.reject(
            event.seq,
            pending.proposal.tool,
            f"approval_{decision}",
            getattr(event, "reason", "") or f"approval {decision}",
        )
        d.settle_proposal(pending.proposal.tool)
