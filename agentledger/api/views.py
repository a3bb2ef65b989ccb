"""What the API and the UI show, derived from the ledger alone (the log and its read models).

Nothing here keeps state of its own: a run's state is the fold of its events, a packet is the
exact body the ledger stored, a receipt is the event that recorded it. The JSON API returns
these dicts as they are; the UI renders the same dicts.
"""

from __future__ import annotations

from typing import Any

from agentledger.activities.ledger import ApprovalRow, Ledger, RunRow
from agentledger.api.problems import not_found
from agentledger.app import packet_views
from agentledger.app.render import message_of, summarize
from agentledger.domain import events as ev
from agentledger.domain.context.items import Sensitivity
from agentledger.domain.fold import project
from agentledger.domain.state import WorkingState


def run_summary(row: RunRow) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "status": row.status,
        "pack": row.pack,
        "principal_id": row.principal_id,
        "tenant_id": row.tenant_id,
        "request_text": row.request_text,
        "answer": row.answer,
        "failure_reason": row.failure_reason,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
        "last_seq": row.last_seq,
        "manifest_hash": row.manifest_hash,
    }


def approval_view(row: ApprovalRow) -> dict[str, Any]:
    """Exactly what a decision approves: the tool, its arguments and the digest bound to them."""
    return {
        "run_id": row.run_id,
        "approval_id": row.approval_id,
        "status": row.status,
        "tool": row.tool,
        "arguments": row.arguments,
        "amount": row.arguments.get("amount"),
        "currency": row.arguments.get("currency"),
        "proposal_digest": row.proposal_digest,
        "requested_by": row.requested_by,
        "approver_role": row.approver_role,
        "expires_at": row.expires_at.isoformat(),
        "decided_by": row.decided_by,
        "reason": row.reason,
    }


def grounds(state: WorkingState) -> dict[str, Any]:
    """The verified facts and evidence a proposal rests on, as the run's state holds them."""
    return {
        "verified_facts": [f.model_dump(mode="json") for f in state.verified_facts.values()],
        "evidence": [e.model_dump(mode="json") for e in state.evidence],
    }


def timeline(events: list[ev.RunEvent]) -> list[dict[str, Any]]:
    """One row per event; a conversation's rows also carry who wrote, what and why
    (``sender``, ``text``, ``reason``; ``None`` on other rows)."""
    rows, step = [], None
    for event in events:
        if isinstance(event, ev.StepStarted):
            step = event.step
        sender, text, reason = message_of(event) or (None, None, None)
        rows.append(
            {
                "seq": event.seq,
                "kind": event.kind,
                "step": step,
                "recorded_at": event.recorded_at.isoformat(),
                "summary": summarize(event),
                "sender": sender,
                "text": text,
                "reason": reason,
            }
        )
    return rows


def packet_index(events: list[ev.RunEvent]) -> list[dict[str, Any]]:
    return [
        {
            "seq": e.seq,
            "step": e.step,
            "packet_hash": e.packet_hash,
            "cache_key": e.cache_key,
            "total_tokens": e.total_tokens,
            "section_tokens": e.section_tokens,
            "omission_count": e.omission_count,
        }
        for e in events
        if isinstance(e, ev.ContextPacketBuilt)
    ]


def packet_view(
    ledger: Ledger, events: list[ev.RunEvent], packet_hash: str, clearance: Sensitivity
) -> dict[str, Any]:
    """A stored packet of this run exactly as the model was sent it (``packet_views``), less
    the content of items above the reader's ``clearance``."""
    built = next(
        (
            e
            for e in events
            if isinstance(e, ev.ContextPacketBuilt) and e.packet_hash == packet_hash
        ),
        None,
    )
    if built is None:
        raise not_found(f"packet {packet_hash} in this run")
    body = ledger.get_packet(packet_hash)
    if body is None:
        raise not_found(f"stored packet {packet_hash}")
    return packet_views.packet_view(
        body, packet_views.model_of(ledger, built.manifest_hash), clearance
    )


packet_diff = packet_views.packet_diff


def receipts(events: list[ev.RunEvent]) -> list[dict[str, Any]]:
    """Each tool result in both views: what the model was shown and what a person reads."""
    return [
        {
            "seq": e.seq,
            **e.receipt.model_dump(
                mode="json", exclude={"evidence", "resources", "observed_at", "facts"}
            ),
            "facts": [f.model_dump(mode="json") for f in e.receipt.facts],
            "observed_at": e.receipt.observed_at.isoformat(),
        }
        for e in events
        if isinstance(e, ev.ToolReceiptRecorded)
    ]


def refusals(events: list[ev.RunEvent]) -> list[dict[str, Any]]:
    """Refused approval attempts, in the domain's words (recorded by the run itself)."""
    return [
        {
            "seq": e.seq,
            "approval_id": e.approval_id,
            "attempted_by": e.attempted_by,
            "reason_code": e.reason_code,
            "detail": e.detail,
        }
        for e in events
        if isinstance(e, ev.ApprovalAttemptRefused)
    ]


def decisions(events: list[ev.RunEvent]) -> list[dict[str, Any]]:
    """Who decided each approval, as the run verified it (the signed assertion it recorded)."""
    return [
        {
            "seq": e.seq,
            "approval_id": e.approval_id,
            "decision": "granted" if isinstance(e, ev.ApprovalGranted) else "rejected",
            "approver": e.approver,
            "assertion": e.assertion.model_dump(mode="json") if e.assertion else None,
            "edit": _edit(e),
        }
        for e in events
        if isinstance(e, ev.ApprovalGranted | ev.ApprovalRejected)
    ]


def _edit(event: ev.ApprovalGranted | ev.ApprovalRejected) -> dict[str, Any] | None:
    """An edited grant's proposed and approved arguments and their difference."""
    edit = event.edit if isinstance(event, ev.ApprovalGranted) else None
    return edit.model_dump(mode="json") if edit is not None else None


def state_view(events: list[ev.RunEvent]) -> dict[str, Any]:
    return project(events).model_dump(mode="json")
