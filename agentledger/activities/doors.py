"""What the doors into the runtime record beside the runs: schedule definitions and changes, and
webhook deliveries.

Neither belongs to one run's log. A schedule is made before any run and outlives each; its
every change (made, paused, resumed, deleted) is appended to ``schedule_journal`` with who made
it, when and the whole definition. A webhook delivery is keyed by (pack, source, delivery id):
the row is the delivery's idempotency record (``WebhookDeliveries.claim``), kept for as long as
the ledger is, where Temporal's memory of a workflow id lasts only its namespace's retention.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from agentledger.domain.workorder import WorkOrder, work_order_digest

_metadata = MetaData()

schedule_journal = Table(
    "schedule_journal",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", String(), nullable=False),
    Column("schedule_id", String(), nullable=False, index=True),
    Column("action", String(), nullable=False),
    Column("by", String(), nullable=False),
    Column("definition", Text, nullable=False),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    _metadata,
    Column("pack", String(), nullable=False),
    Column("source", String(), nullable=False),
    Column("delivery_id", String(), nullable=False),
    Column("received_at", String(), nullable=False),
    Column("run_id", String(), nullable=False),
    Column("started", Integer, nullable=False, default=0),
    PrimaryKeyConstraint("pack", "source", "delivery_id"),
)


@dataclass(frozen=True)
class ScheduleChange:
    at: str
    schedule_id: str
    action: str
    by: str
    definition: dict[str, Any]


class ScheduleJournal:
    """Append-only: every change to every schedule, with who and when."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        _metadata.create_all(engine, tables=[schedule_journal], checkfirst=True)

    def record(
        self, schedule_id: str, action: str, by: str, at: datetime, definition: dict[str, Any]
    ) -> None:
        row = {
            "at": at.isoformat(),
            "schedule_id": schedule_id,
            "action": action,
            "by": by,
            "definition": json.dumps(definition, sort_keys=True, default=str),
        }
        with self._engine.begin() as conn:
            conn.execute(insert(schedule_journal), row)

    def history(self, schedule_id: str) -> list[ScheduleChange]:
        query = (
            select(schedule_journal)
            .where(schedule_journal.c.schedule_id == schedule_id)
            .order_by(schedule_journal.c.id)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            ScheduleChange(r.at, r.schedule_id, r.action, r.by, json.loads(r.definition))
            for r in rows
        ]

    def standing(self, principal_id: str) -> list[str]:
        """The names of the schedules made to run as ``principal_id`` and not deleted since, as
        the journal has them (Temporal's list of schedules may lag behind a new one)."""
        query = select(
            schedule_journal.c.schedule_id, schedule_journal.c.action, schedule_journal.c.definition
        ).order_by(schedule_journal.c.id)
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        standing: dict[str, str] = {}
        for row in rows:
            definition = json.loads(row.definition)
            if row.action == "created" and definition.get("principal") == principal_id:
                standing[row.schedule_id] = str(definition["name"])
            elif row.action == "deleted":
                standing.pop(row.schedule_id, None)
        return sorted(standing.values())


def forget_requests(conn: Connection, principal_id: str) -> dict[str, int]:
    """Blank the request in every journal entry of the schedules that ran as ``principal_id``
    (in an erasure's transaction): who changed what and when stays, and so does the work
    order's digest."""
    if not inspect(conn).has_table(schedule_journal.name):
        return {"schedule_entries": 0}
    rows = conn.execute(select(schedule_journal.c.id, schedule_journal.c.definition)).all()
    entries = [(r.id, json.loads(r.definition)) for r in rows]
    theirs = [(i, d) for i, d in entries if d.get("principal") == principal_id and d.get("request")]
    for entry_id, definition in theirs:
        blank = json.dumps({**definition, "request": ""}, sort_keys=True, default=str)
        conn.execute(
            update(schedule_journal)
            .where(schedule_journal.c.id == entry_id)
            .values(definition=blank)
        )
    return {"schedule_entries": len(theirs)}


WORK_ORDER_DIGEST = "work_order_digest"
"""The key under which a schedule's ``created`` entry journals the digest of its work order."""


def schedule_problem(history: list[ScheduleChange], work_order: WorkOrder) -> str | None:
    """Why a firing with ``work_order`` is not one of the schedule whose ``history`` this is
    (``None``: it is: made with exactly this work order and not deleted)."""
    made = next((c for c in history if c.action == "created"), None)
    if made is None:
        return "the ledger's schedule journal holds no such schedule"
    if history[-1].action == "deleted":
        return "the schedule was deleted"
    recorded = made.definition.get(WORK_ORDER_DIGEST)
    if recorded is None:
        return "it was made before firings were bound to their work order; make it again"
    if recorded != work_order_digest(work_order):
        return "the schedule was made with another work order"
    return None


@dataclass(frozen=True)
class Claim:
    run_id: str
    first: bool
    """This delivery id was new; otherwise a redelivery of a known one."""
    started: bool
    """A run was already started for it (a redelivery is then answered as a duplicate)."""


class WebhookDeliveries:
    """One row per delivery id; a redelivery finds it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        _metadata.create_all(engine, tables=[webhook_deliveries], checkfirst=True)

    def claim(self, pack: str, source: str, delivery_id: str, run_id: str, at: datetime) -> Claim:
        """Record the delivery (if new) with the run it starts; the stored row wins a race."""
        row = {"pack": pack, "source": source, "delivery_id": delivery_id,
               "received_at": at.isoformat(), "run_id": run_id, "started": 0}  # fmt: skip
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(webhook_deliveries), row)
            return Claim(run_id, first=True, started=False)
        except IntegrityError:
            found = self._row(pack, source, delivery_id)
            return Claim(found.run_id, first=False, started=bool(found.started))

    def mark_started(self, pack: str, source: str, delivery_id: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                update(webhook_deliveries).where(*self._key(pack, source, delivery_id)),
                {"started": 1},
            )

    def count(self, pack: str, source: str) -> int:
        query = select(webhook_deliveries.c.run_id).where(
            webhook_deliveries.c.pack == pack, webhook_deliveries.c.source == source
        )
        with self._engine.connect() as conn:
            return len(conn.execute(query).all())

    def _row(self, pack: str, source: str, delivery_id: str) -> Any:
        query = select(webhook_deliveries).where(*self._key(pack, source, delivery_id))
        with self._engine.connect() as conn:
            return conn.execute(query).one()

    @staticmethod
    def _key(pack: str, source: str, delivery_id: str) -> tuple[Any, ...]:
        c = webhook_deliveries.c
        return (c.pack == pack, c.source == source, c.delivery_id == delivery_id)
