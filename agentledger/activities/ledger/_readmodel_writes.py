"""The statements that write the read models ``_readmodels`` collects, each run once per append.

Each is idempotent and never moves backwards, so re-appended events pass through harmlessly.
With a ``seal`` (a sealed ledger), the read models' copies of a run's content (its request, its
answer, why it failed, approvals' arguments and decisions' reasons) are stored sealed under the
run's key like its events, and the request's words as the runs search's digests (``run_terms``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

from sqlalchemy import Connection, Table, bindparam, case, exists, select, update

from agentledger.activities._sql import insert_for
from agentledger.activities.ledger._codec import clean_text, dumps_str
from agentledger.activities.ledger._tables import approvals, receipts, run_terms, runs

_LIVE = ("running", "awaiting_approval")
SEALED_COLUMNS = {"b_answer": "answer", "b_failure": "failure_reason", "arguments": "arguments",
                  "b_reason": "reason"}  # fmt: skip
"""The read models' columns holding a run's content: parameter name, column."""


class Seal(Protocol):
    def text(self, run_id: str, text: str) -> str:
        """``text`` sealed under the run's key, as stored."""

    def terms(self, text: str) -> list[str]:
        """``text``'s words as the runs search's digests."""


@dataclass
class Changes:
    """The rows one append writes, collected per batch, one list per statement."""

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


def write_changes(
    conn: Connection, c: Changes, progress: list[dict[str, Any]], seal: Seal | None = None
) -> None:
    """Run rows first (progress updates need them, and sealing finds a run's key by its row),
    approvals before the run status they set."""
    dialect = conn.dialect.name
    if seal is None:
        _run(conn, _upsert_started(dialect), c.started)
    else:
        _start_sealed(conn, c.started, seal)
    _run(conn, _PROGRESS, progress)
    _run(conn, _insert_ignoring(dialect, approvals), _sealed(c.requested, seal))
    _run(conn, _DECIDE, _sealed(c.decided, seal))
    if c.approval_runs:
        conn.execute(_awaiting_status(sorted(c.approval_runs)))
    _run(conn, _END, _sealed(c.ended, seal))
    _run(conn, _upsert_receipts(dialect), list(c.receipts.values()))


def _start_sealed(conn: Connection, started: list[dict[str, Any]], seal: Seal) -> None:
    """The run rows with their request blank, then sealed (the run's key is found by its row:
    the clear text never reaches the table), and the request's words as digests."""
    _run(conn, _upsert_started(conn.dialect.name), [{**r, "request_text": ""} for r in started])
    requests = [(r["run_id"], r["request_text"]) for r in started]
    _run(conn, _REQUEST, [{"b_run_id": i, "b_request": seal.text(i, t)} for i, t in requests])
    terms = [{"run_id": i, "term": term} for i, t in requests for term in seal.terms(t)]
    _run(conn, _insert_ignoring(conn.dialect.name, run_terms), terms)


def _sealed(rows: list[dict[str, Any]], seal: Seal | None) -> list[dict[str, Any]]:
    if seal is None:
        return rows
    return [_sealed_row(row, seal) for row in rows]


def _sealed_row(row: dict[str, Any], seal: Seal) -> dict[str, Any]:
    run_id = row.get("run_id") or row["b_run_id"]
    sealed = dict(row)
    for name in SEALED_COLUMNS.keys() & row.keys():
        value = row[name]
        if value is not None and value != {}:
            sealed[name] = seal.text(run_id, value if isinstance(value, str) else dumps_str(value))
    return sealed


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
_REQUEST = (
    update(runs)
    .where(runs.c.run_id == bindparam("b_run_id"), runs.c.request_text == "")
    .values(request_text=bindparam("b_request"))
)
"""Once: a re-appended ``run_started`` finds its request sealed already."""

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
