"""The hot path: ``run_events`` rows go straight to the driver's ``executemany``.

Core's executemany assembles every row's parameters in Python, which costs more than SQLite's
insert itself. This keeps SQLAlchemy's own compiled SQL and each column's own bind processor,
so values reach the driver exactly as Core would send them, minus the per-row bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Connection, Dialect

from agentledger.activities._sql import insert_for
from agentledger.activities.ledger._tables import run_events

COLUMNS = tuple(column.name for column in run_events.c)
"""The order of an encoded row (see ``_codec.encode_event``)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    sql: str
    positional: bool
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]


@cache
def _plan(dialect: Dialect) -> _Plan:
    stmt = insert_for(dialect.name, run_events).on_conflict_do_nothing()
    compiled = stmt.compile(dialect=dialect, column_keys=list(COLUMNS))
    if compiled.positional and tuple(compiled.positiontup or ()) != COLUMNS:
        raise RuntimeError(f"unexpected parameter order {compiled.positiontup}")
    processors = []
    for index, name in enumerate(COLUMNS):
        processor = run_events.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            processors.append((index, processor))
    return _Plan(compiled.string, compiled.positional, tuple(processors))


def insert_rows(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> int:
    """Insert-or-ignore ``rows``; returns how many were new."""
    plan = _plan(conn.dialect)
    params: list[Any] = []
    for row in rows:
        values = list(row)
        for index, processor in plan.processors:
            values[index] = processor(values[index])
        params.append(tuple(values) if plan.positional else dict(zip(COLUMNS, values, strict=True)))
    # preserve_rowcount: psycopg forgets the rowcount once SQLAlchemy closes the cursor.
    result = conn.exec_driver_sql(plan.sql, params, {"preserve_rowcount": True})
    return result.rowcount
