"""Read models derived from appended events, written in the append's own transaction.

One append call costs a fixed handful of statements whatever its size: changes are collected
per batch first (last progress per run, one row per approval and receipt), then written with
``executemany``. Every update is idempotent and never moves backwards (progress only rises, a
decision applies only to a pending approval, a receipt only replaces an older one), so
re-appended events pass through harmlessly and a rebuild from the log gives the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from sqlalchemy import Connection, Table, bindparam, case, exists, select, update

from agentledger.activities._sql import insert_for
from agentledger.activities.ledger._codec import clean_text
from agentledger.activities.ledger._tables import approvals, receipts, runs
from agentledger.domain.events import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunStarted,
    ToolReceiptRecorded,
)

_LIVE = ("running", "awaiting_approval")


@dataclass
class _Changes:
    started: list[dict[str, Any]] = field(default_factory=list)
    requested: list[dict[str, Any]] = field(default_factory=list)
    decided: list[dict[str, Any]] = field(default_factory=list)
    ended: list[dict[str, Any]] = field(default_factory=list)
    receipts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    approval_runs: set[str] = field(default_factory=set)
    clean: bool = False

    def text(self, row: dict[str, Any]) -> dict[str, Any]:
        """Rows replace U+0000 (unstorable in PostgreSQL text) when the batch may hold one; the
        log keeps the exact text, read models are for display."""
        return clean_text(row) if self.clean else row


def apply_read_models(conn: Connection, events: Iterable[RunEvent], *, clean: bool) -> None:
    """``clean``: some event of the batch may contain U+0000 (see ``_codec.may_hold_nul``)."""
    changes = _Changes(clean=clean)
    latest: dict[str, RunEvent] = {}
    for event in events:
        known = latest.get(event.run_id)
        if known is None or event.seq > known.seq:
            latest[event.run_id] = event
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(changes, event)
    _write(conn, changes, _progress(changes, latest))


def _progress(c: _Changes, latest: dict[str, RunEvent]) -> list[dict[str, Any]]:
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


def _on_started(c: _Changes, e: RunStarted) -> None:
    c.started.append(c.text(_started_row(e)))


def _on_completed(c: _Changes, e: RunCompleted) -> None:
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


def _on_failed(c: _Changes, e: RunFailed) -> None:
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


def _on_requested(c: _Changes, e: ApprovalRequested) -> None:
    c.requested.append(c.text(_requested_row(e)))
    c.approval_runs.add(e.run_id)


def _on_decided(c: _Changes, e: ApprovalGranted | ApprovalRejected | ApprovalExpired) -> None:
    c.decided.append(c.text(_decision_row(e)))
    c.approval_runs.add(e.run_id)


def _on_receipt(c: _Changes, e: ToolReceiptRecorded) -> None:
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
_HANDLERS: dict[type, Callable[[_Changes, Any], None]] = {
    RunStarted: _on_started,
    RunCompleted: _on_completed,
    RunFailed: _on_failed,
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


def _write(conn: Connection, c: _Changes, progress: list[dict[str, Any]]) -> None:
    dialect = conn.dialect.name
    _run(conn, _upsert_started(dialect), c.started)
    _run(conn, _PROGRESS, progress)
    _run(conn, _insert_ignoring(dialect, approvals), c.requested)
    _run(conn, _DECIDE, c.decided)
    if c.approval_runs:
        conn.execute(_awaiting_status(sorted(c.approval_runs)))
    _run(conn, _END, c.ended)
    _run(conn, _upsert_receipts(dialect), list(c.receipts.values()))


def _run(conn: Connection, stmt: Any, rows: list[dict[str, Any]]) -> None:
    # One row goes as a plain execute: psycopg's executemany pipelines, which costs more for one.
    if len(rows) == 1:
        conn.execute(stmt, rows[0])
    elif rows:
        conn.execute(stmt, rows)


_PROGRESS = (
    update(runs)
    .where(runs.c.run_id == bindparam("b_run_id"), runs.c.last_seq < bindparam("b_seq"))
    .values(
        last_seq=bindparam("b_seq"),
        updated_at=bindparam("b_at"),
        manifest_hash=bindparam("b_manifest"),
    )
)

# Only a pending approval can be decided; a late duplicate decision changes nothing.
_DECIDE = (
    update(approvals)
    .where(
        approvals.c.run_id == bindparam("b_run_id"),
        approvals.c.approval_id == bindparam("b_approval_id"),
        approvals.c.status == "pending",
    )
    .values(
        status=bindparam("b_status"),
        decided_by=bindparam("b_decided_by"),
        reason=bindparam("b_reason"),
        updated_at=bindparam("b_at"),
    )
)

_NEWER = runs.c.last_seq < bindparam("b_seq")

_END = (
    update(runs)
    .where(runs.c.run_id == bindparam("b_run_id"))
    .values(
        status=bindparam("b_status"),
        answer=bindparam("b_answer"),
        cited_source_ids=bindparam("b_cited"),
        failure_reason=bindparam("b_failure"),
        # Progress rides along, and still never moves backwards.
        last_seq=case((_NEWER, bindparam("b_seq")), else_=runs.c.last_seq),
        updated_at=case((_NEWER, bindparam("b_at")), else_=runs.c.updated_at),
        manifest_hash=case((_NEWER, bindparam("b_manifest")), else_=runs.c.manifest_hash),
    )
)


def _awaiting_status(run_ids: list[str]) -> Any:
    """A live run awaits approval exactly while it has a pending approval."""
    pending = exists(
        select(approvals.c.approval_id).where(
            approvals.c.run_id == runs.c.run_id, approvals.c.status == "pending"
        )
    )
    return (
        update(runs)
        .where(runs.c.run_id.in_(run_ids), runs.c.status.in_(_LIVE))
        .values(status=case((pending, "awaiting_approval"), else_="running"))
    )


@cache
def _insert_ignoring(dialect: str, table: Table) -> Any:
    return insert_for(dialect, table).on_conflict_do_nothing()


@cache
def _upsert_started(dialect: str) -> Any:
    """A re-appended run_started may come with new events: then only the progress moves."""
    stmt = insert_for(dialect, runs)
    new = stmt.excluded
    return stmt.on_conflict_do_update(
        index_elements=[runs.c.run_id],
        set_={
            "last_seq": new.last_seq,
            "updated_at": new.updated_at,
            "manifest_hash": new.manifest_hash,
        },
        where=runs.c.last_seq < new.last_seq,
    )


@cache
def _upsert_receipts(dialect: str) -> Any:
    stmt = insert_for(dialect, receipts)
    new = stmt.excluded
    # An in-doubt receipt is later settled by reconciliation: the later receipt wins.
    return stmt.on_conflict_do_update(
        index_elements=[receipts.c.run_id, receipts.c.operation_id],
        set_={
            "tool": new.tool,
            "status": new.status,
            "idempotency_key": new.idempotency_key,
            "receipt_id": new.receipt_id,
            "seq": new.seq,
        },
        where=receipts.c.seq < new.seq,
    )
