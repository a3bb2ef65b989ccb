"""Read models derived from appended events, written in the append's own transaction.

One append call costs a fixed handful of statements whatever its size: changes are collected
per batch first (last progress per run, one row per approval and receipt), then written with
``executemany`` (``_readmodel_writes``). Every update is idempotent and never moves backwards
(progress only rises, a decision applies only to a pending approval, a receipt only replaces an
older one), so re-appended events pass through harmlessly and a rebuild from the log gives the
same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Connection

from agentledger.activities.ledger._readmodel_writes import Changes, Seal, write_changes
from agentledger.domain.events import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    RunCancelled,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunStarted,
    ToolReceiptRecorded,
)


def apply_read_models(
    conn: Connection, events: Iterable[RunEvent], *, clean: bool, seal: Seal | None = None
) -> None:
    """``clean``: some event of the batch may contain U+0000 (see ``_codec.may_hold_nul``);
    ``seal``: how the run's content in them is sealed (``_readmodel_writes``)."""
    changes = Changes(clean=clean)
    latest: dict[str, RunEvent] = {}
    for event in events:
        known = latest.get(event.run_id)
        if known is None or event.seq > known.seq:
            latest[event.run_id] = event
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(changes, event)
    write_changes(conn, changes, _progress(changes, latest), seal)


def _progress(c: Changes, latest: dict[str, RunEvent]) -> list[dict[str, Any]]:
    """Each run's newest seq and time; runs whose row is written anyway carry it in that row
    (a whole short run, or its first and last append, then costs one statement fewer)."""
    carried = set()
    for row in c.started:
        e = latest[row["run_id"]]
        row.update(last_seq=e.seq, updated_at=e.recorded_at, manifest_hash=e.manifest_hash)
        carried.add(e.run_id)
    for row in c.ended:
        e = latest[row["b_run_id"]]
        row.update(b_seq=e.seq, b_at=e.recorded_at, b_manifest=e.manifest_hash)
        carried.add(e.run_id)
    return [
        {"b_run_id": e.run_id, "b_seq": e.seq, "b_at": e.recorded_at, "b_manifest": e.manifest_hash}
        for e in latest.values()
        if e.run_id not in carried
    ]


def _on_started(c: Changes, e: RunStarted) -> None:
    c.started.append(c.text(_started_row(e)))


def _on_completed(c: Changes, e: RunCompleted) -> None:
    c.ended.append(
        c.text(
            {
                "b_run_id": e.run_id,
                "b_status": "completed",
                "b_answer": e.answer,
                "b_cited": list(e.cited_source_ids),
                "b_failure": None,
            }
        )
    )


def _on_failed(c: Changes, e: RunFailed) -> None:
    c.ended.append(
        c.text(
            {
                "b_run_id": e.run_id,
                "b_status": "failed",
                "b_answer": None,
                "b_cited": None,
                "b_failure": f"{e.reason_code}: {e.message}",
            }
        )
    )


def _on_cancelled(c: Changes, e: RunCancelled) -> None:
    c.ended.append(
        c.text(
            {
                "b_run_id": e.run_id,
                "b_status": "cancelled",
                "b_answer": None,
                "b_cited": None,
                "b_failure": f"cancelled by {e.cancelled_by}: {e.reason}",
            }
        )
    )


def _on_requested(c: Changes, e: ApprovalRequested) -> None:
    c.requested.append(c.text(_requested_row(e)))
    c.approval_runs.add(e.run_id)


def _on_decided(c: Changes, e: ApprovalGranted | ApprovalRejected | ApprovalExpired) -> None:
    c.decided.append(c.text(_decision_row(e)))
    c.approval_runs.add(e.run_id)


def _on_receipt(c: Changes, e: ToolReceiptRecorded) -> None:
    r = e.receipt
    c.receipts[(e.run_id, r.operation_id)] = c.text(
        {
            "run_id": e.run_id,
            "operation_id": r.operation_id,
            "tool": r.tool,
            "status": r.status,
            "idempotency_key": r.idempotency_key,
            "receipt_id": r.receipt_id,
            "seq": e.seq,
        }
    )


# Looked up by exact type: most events (steps, packets, decisions) touch only the progress row.
_HANDLERS: dict[type, Callable[[Changes, Any], None]] = {
    RunStarted: _on_started,
    RunCompleted: _on_completed,
    RunFailed: _on_failed,
    RunCancelled: _on_cancelled,
    ApprovalRequested: _on_requested,
    ApprovalGranted: _on_decided,
    ApprovalRejected: _on_decided,
    ApprovalExpired: _on_decided,
    ToolReceiptRecorded: _on_receipt,
}


def _started_row(e: RunStarted) -> dict[str, Any]:
    order = e.work_order
    return {
        "run_id": e.run_id,
        "status": "running",
        "pack": order.pack,
        "principal_id": order.principal.user_id,
        "tenant_id": order.principal.tenant_id,
        "request_text": order.request_text,
        "answer": None,
        "cited_source_ids": None,
        "failure_reason": None,
        "created_at": e.recorded_at,
        "updated_at": e.recorded_at,
        "last_seq": e.seq,
        "manifest_hash": e.manifest_hash,
    }


def _requested_row(e: ApprovalRequested) -> dict[str, Any]:
    return {
        "run_id": e.run_id,
        "approval_id": e.approval_id,
        "status": "pending",
        "operation_id": e.operation_id,
        "tool": e.proposal.tool,
        "arguments": e.proposal.arguments,
        "proposal_digest": e.proposal_digest,
        "requested_by": e.requested_by,
        "approver_role": e.approver_role,
        "expires_at": e.expires_at,
        "decided_by": None,
        "reason": None,
        "updated_at": e.recorded_at,
    }


def _decision_row(e: ApprovalGranted | ApprovalRejected | ApprovalExpired) -> dict[str, Any]:
    status = {
        "approval_granted": "granted",
        "approval_rejected": "rejected",
        "approval_expired": "expired",
    }[e.kind]
    return {
        "b_run_id": e.run_id,
        "b_approval_id": e.approval_id,
        "b_status": status,
        "b_decided_by": getattr(e, "approver", None),
        "b_reason": getattr(e, "reason", None),
        "b_at": e.recorded_at,
    }
