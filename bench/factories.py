"""Hand-built, valid run events for tests and benchmarks.

``RunScript`` appends one event per call with the envelope filled in (next seq, a clock that
advances a second per event, the manifest hash), so a test reads as the story of a run.
``refund_run`` tells the whole refund story from the seeds: read the order, find the policy,
propose a refund, get it approved, create it, answer with citations.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import JsonValue

from agentledger.domain import events as ev
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import Answer, CallTool, ProceedToAnswer, ToolCallProposal
from agentledger.domain.principal import Principal
from agentledger.domain.tools import EvidencePassage, ReceiptStatus, ResourceRef, VerifiedFact
from agentledger.domain.tools import Receipt as ToolReceipt
from agentledger.domain.workorder import WorkOrder

T0 = datetime(2026, 8, 24, 14, 0, tzinfo=UTC)
MANIFEST_HASH = "sha256:" + "5e" * 32
REQUEST = "Can I get a refund for order ord_4821? It arrived late."

E = TypeVar("E", bound=ev.Envelope)


def principal(user_id: str = "usr_73", **overrides: Any) -> Principal:
    fields: dict[str, Any] = {
        "tenant_id": "acme",
        "display_name": "Dana",
        "scopes": frozenset({"orders:read", "policy:read"}),
    }
    return Principal(user_id=user_id, **{**fields, **overrides})


def work_order(request: str = REQUEST, who: Principal | None = None) -> WorkOrder:
    return WorkOrder(
        objective="resolve a refund request",
        request_text=request,
        principal=who or principal(),
        pack="support",
        agent_profile_id="support-refunds",
        references={"order_id": "ord_4821"},
    )


class RunScript:
    """Builds one run's events in order. Every method appends and returns its event."""

    def __init__(
        self, run_id: str = "run-1", *, start: datetime = T0, manifest_hash: str = MANIFEST_HASH
    ) -> None:
        self.run_id = run_id
        self.manifest_hash = manifest_hash
        self.now = start
        self.events: list[ev.RunEvent] = []

    @property
    def seq(self) -> int:
        return len(self.events)

    def add(self, cls: type[E], **fields: Any) -> E:
        self.now += timedelta(seconds=1)
        event = cls(
            run_id=self.run_id,
            seq=self.seq + 1,
            recorded_at=self.now,
            manifest_hash=self.manifest_hash,
            **fields,
        )
        self.events.append(event)  # type: ignore[arg-type]
        return event

    def started(self, request: str = REQUEST, who: Principal | None = None) -> ev.RunStarted:
        return self.add(
            ev.RunStarted, work_order=work_order(request, who), policy_version="returns-2026-08"
        )

    def step(self, name: str = "choose_next_action") -> ev.StepStarted:
        return self.add(ev.StepStarted, step=name)

    def packet(self, step: str = "choose_next_action", tokens: int = 420) -> ev.ContextPacketBuilt:
        digest = sha256_hex({"run": self.run_id, "seq": self.seq + 1})
        return self.add(
            ev.ContextPacketBuilt,
            step=step,
            packet_hash=digest,
            cache_key=digest,
            section_tokens={"instructions": 120, "working_state": tokens - 120},
            total_tokens=tokens,
            omission_count=1,
            included_ids=("req",),
        )

    def call(
        self,
        tool: str,
        arguments: dict[str, JsonValue] | None = None,
        step: str = "choose_next_action",
    ) -> ev.DecisionRecorded:
        proposal = ToolCallProposal(tool=tool, arguments=arguments or {})
        return self.add(
            ev.DecisionRecorded,
            step=step,
            model_profile="small",
            decision=CallTool(proposal=proposal, rationale="need the facts"),
        )

    def proceed(self, step: str = "choose_next_action") -> ev.DecisionRecorded:
        return self.add(
            ev.DecisionRecorded,
            step=step,
            model_profile="small",
            decision=ProceedToAnswer(rationale="enough is known"),
        )

    def answer(
        self, text: str, sources: tuple[str, ...] = (), propose: ToolCallProposal | None = None
    ) -> ev.DecisionRecorded:
        decision = Answer(answer=text, supporting_source_ids=sources, proposed_next_action=propose)
        return self.add(
            ev.DecisionRecorded, step="draft_answer", model_profile="small", decision=decision
        )

    def authorise(
        self,
        op: str,
        tool: str,
        arguments: dict[str, JsonValue] | None = None,
        *,
        approval_id: str | None = None,
        write: bool = False,
        resource_id: str | None = None,
    ) -> ev.ToolCallAuthorised:
        args = arguments or {}
        return self.add(
            ev.ToolCallAuthorised,
            operation_id=op,
            tool=tool,
            tool_version="1.0.0",
            arguments=args,
            arguments_digest=sha256_hex(args),
            idempotency_key=f"idem-{self.run_id}-{op}" if write else None,
            approval_id=approval_id,
            resource_id=resource_id,
        )

    def receipt(
        self,
        op: str,
        tool: str,
        status: ReceiptStatus = "succeeded",
        *,
        facts: tuple[VerifiedFact, ...] = (),
        resources: tuple[ResourceRef, ...] = (),
        evidence: tuple[EvidencePassage, ...] = (),
        write: bool = False,
    ) -> ev.ToolReceiptRecorded:
        receipt = ToolReceipt(
            operation_id=op,
            tool=tool,
            tool_version="1.0.0",
            status=status,
            idempotency_key=f"idem-{self.run_id}-{op}" if write else None,
            receipt_id=f"rcpt-{op}" if status == "succeeded" else None,
            facts=facts,
            resources=resources,
            evidence=evidence,
            model_view={"status": status},
            user_view=f"{tool}: {status}",
            output_hash=sha256_hex([self.run_id, op]),
            observed_at=self.now,
        )
        return self.add(ev.ToolReceiptRecorded, receipt=receipt)

    def evidence(self, source_id: str, text: str, revision: str = "r1") -> ev.EvidenceRecorded:
        return self.add(
            ev.EvidenceRecorded,
            source_id=source_id,
            revision=revision,
            content_hash=sha256_hex(text),
            trust="approved_policy",
            title=source_id.split("#")[0],
            text=text,
        )

    def request_approval(
        self, approval_id: str, op: str, tool: str, arguments: dict[str, JsonValue]
    ) -> ev.ApprovalRequested:
        proposal = ToolCallProposal(tool=tool, arguments=arguments)
        return self.add(
            ev.ApprovalRequested,
            approval_id=approval_id,
            operation_id=op,
            proposal=proposal,
            proposal_digest=digest(proposal),
            requested_by="usr_73",
            approver_role="approver",
            expires_at=self.now + timedelta(days=1),
        )

    def grant(self, approval: ev.ApprovalRequested, approver: str = "mgr_1") -> ev.ApprovalGranted:
        return self.add(
            ev.ApprovalGranted,
            approval_id=approval.approval_id,
            approver=approver,
            proposal_digest=approval.proposal_digest,
        )

    def reject(self, approval_id: str, reason: str = "not eligible") -> ev.ApprovalRejected:
        return self.add(
            ev.ApprovalRejected, approval_id=approval_id, approver="mgr_1", reason=reason
        )

    def expire(self, approval_id: str) -> ev.ApprovalExpired:
        return self.add(ev.ApprovalExpired, approval_id=approval_id)

    def complete(
        self,
        answer: str = "Your refund of 42.50 EUR was created.",
        sources: tuple[str, ...] = ("returns-2026-08#late-delivery",),
    ) -> ev.RunCompleted:
        return self.add(ev.RunCompleted, answer=answer, cited_source_ids=sources)

    def fail(self, code: str = "budget_exhausted", message: str = "no steps left") -> ev.RunFailed:
        return self.add(ev.RunFailed, reason_code=code, message=message)


def digest(proposal: ToolCallProposal) -> str:
    return sha256_hex(proposal.model_dump(mode="json"))


def order_facts(at: datetime, order_id: str = "ord_4821") -> tuple[VerifiedFact, ...]:
    values: dict[str, JsonValue] = {
        "order_status": "delivered_late",
        "refundable_amount": 42.5,
        "currency": "EUR",
    }
    return tuple(
        VerifiedFact(name=k, value=v, resource_id=order_id, observed_at=at)
        for k, v in values.items()
    )


def refund_run(run_id: str = "run-1", *, start: datetime = T0, finish: bool = True) -> RunScript:
    """The seeds' refund story, approved and completed (or left awaiting approval)."""
    s = RunScript(run_id, start=start)
    s.started()
    s.step()
    s.packet()
    s.call("get_order", {"order_id": "ord_4821"})
    s.authorise("op_104", "get_order", {"order_id": "ord_4821"})
    s.receipt(
        "op_104",
        "get_order",
        facts=order_facts(s.now),
        resources=(
            ResourceRef(
                resource_id="ord_4821", kind="order", owner_user_id="usr_73", tenant_id="acme"
            ),
        ),
    )
    s.step()
    s.call("search_returns_policy", {"query": "late delivery refund"})
    s.authorise("op_105", "search_returns_policy", {"query": "late delivery refund"})
    s.receipt("op_105", "search_returns_policy")
    s.evidence(
        "returns-2026-08#late-delivery",
        "Late deliveries qualify for a refund review within 30 days.",
    )
    s.step("draft_answer")
    refund = {"order_id": "ord_4821", "amount": 42.5, "currency": "EUR"}
    s.answer(
        "You qualify for a refund review.",
        ("returns-2026-08#late-delivery",),
        ToolCallProposal(tool="create_refund", arguments=refund),
    )
    approval = s.request_approval("appr_1", "op_106", "create_refund", refund)
    if not finish:
        return s
    s.grant(approval)
    s.authorise("op_106", "create_refund", refund, approval_id="appr_1", write=True)
    s.receipt("op_106", "create_refund", write=True)
    s.complete()
    return s
