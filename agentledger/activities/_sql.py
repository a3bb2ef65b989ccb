"""SQL helpers shared by every store (ledger, memory, retrieval): one spelling of an upsert."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection


def insert_for(dialect_name: str, table: Table) -> Any:
    """The dialect's INSERT, which knows ``ON CONFLICT`` (both backends spell it the same)."""
    if dialect_name == "postgresql":
        return postgresql_insert(table)
    if dialect_name == "sqlite":
        return sqlite_insert(table)
    raise ValueError(f"unsupported dialect {dialect_name}")


def upsert(conn: Connection, table: Table, row: dict[str, Any], key: Sequence[str]) -> None:
    """Insert ``row``, or overwrite the one with the same ``key``: concurrent writers of one key
    both succeed (the last one wins) instead of one failing on the unique index."""
    stmt = insert_for(conn.dialect.name, table).values(row)
    changed = {c: stmt.excluded[c] for c in row if c not in key}
    conn.execute(stmt.on_conflict_do_update(index_elements=list(key), set_=changed))


def insert_missing(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert the rows not already there (by any unique index)."""
    if rows:
        conn.execute(insert_for(conn.dialect.name, table).on_conflict_do_nothing(), list(rows))
