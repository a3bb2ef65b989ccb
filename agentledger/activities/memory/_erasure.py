"""A subject's memories, counted and forgotten for an erasure (``activities.ledger.erasure``),
in the erasure's own transaction."""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, inspect, select, text

from agentledger.activities.memory import _tables as memory


def forget_subject(conn: Connection, tenant_id: str, subject_id: str) -> dict[str, int]:
    """Delete the subject's memories, their history, caches and summaries."""
    if not inspect(conn).has_table(memory.records.name):
        return {"memories": 0}
    of_subject = (memory.records.c.tenant_id == tenant_id) & (
        memory.records.c.user_id == subject_id
    )
    found = list(
        conn.execute(select(memory.records.c.row_id, memory.records.c.memory_id).where(of_subject))
    )
    ids = [memory_id for _, memory_id in found]
    if conn.dialect.name == "sqlite" and found:
        for row_id, _ in found:
            conn.execute(text(f"DELETE FROM {memory.FTS_TABLE} WHERE rowid = :r"), {"r": row_id})
        conn.execute(
            text(f"INSERT INTO {memory.FTS_TABLE}({memory.FTS_TABLE}) VALUES ('optimize')")
        )
    for table in (memory.events, memory.derivations):
        conn.execute(delete(table).where(table.c.memory_id.in_(ids)))
    for table in (memory.cache, memory.summaries):
        conn.execute(
            delete(table).where((table.c.tenant_id == tenant_id) & (table.c.user_id == subject_id))
        )
    conn.execute(delete(memory.records).where(of_subject))
    return {"memories": len(ids)}


def subject_memories(conn: Connection, tenant_id: str, subject_id: str) -> int:
    """How many memories the subject has."""
    if not inspect(conn).has_table(memory.records.name):
        return 0
    query = (
        select(func.count())
        .select_from(memory.records)
        .where(memory.records.c.tenant_id == tenant_id, memory.records.c.user_id == subject_id)
    )
    return int(conn.execute(query).scalar_one())
