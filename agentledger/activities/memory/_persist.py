"""Row-level persistence of memory records, events, the index and derived artifacts.

Every function takes the caller's connection: one store operation is one transaction, so a
record, its events, its index entry and the artifacts derived from it never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import JsonValue
from sqlalchemy import Connection, bindparam, delete, func, insert, or_, select, text, update

from agentledger.activities._terms import aware, utc
from agentledger.activities.memory._sealing import MemorySeal
from agentledger.activities.memory._tables import (
    FTS_TABLE,
    NO_USER,
    cache,
    derivations,
    events,
    records,
    summaries,
)
from agentledger.domain.memory import MemoryEvent, MemoryRecord, Transition


def content_text(record: MemoryRecord) -> str:
    """What the index sees: keys and values as words ("language en")."""
    return " ".join(f"{k.replace('_', ' ')} {_words(v)}" for k, v in sorted(record.content.items()))


def _words(value: JsonValue) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_words(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(_words(v) for v in value)
    return str(value)


def load(conn: Connection, memory_id: str, seal: MemorySeal) -> MemoryRecord | None:
    row = conn.execute(select(records.c.record).where(records.c.memory_id == memory_id)).first()
    return seal.opened(conn, [row[0]])[0] if row is not None else None


def load_many(conn: Connection, rows: Iterable[Any], seal: MemorySeal) -> list[MemoryRecord]:
    return seal.opened(conn, rows)


def save(conn: Connection, transition: Transition, seal: MemorySeal) -> int:
    """Write the record's new form (sealed where ``seal`` says) and its events; keep the SQLite
    index to published rows.

    Returns how many index entries holding the old content are gone (for deletion receipts)."""
    record = transition.record
    found = conn.execute(
        select(records.c.row_id, records.c.content_text).where(
            records.c.memory_id == record.memory_id
        )
    ).first()
    stored, text_ = seal.stored(conn, record, content_text(record), new=found is None)
    values: dict[str, Any] = {
        "tenant_id": record.scope.tenant_id,
        "user_id": record.scope.user_id or NO_USER,
        "category": record.category,
        "state": record.state,
        "claim_key": record.claim_key,
        "expires_at": utc(record.expires_at) if record.expires_at else None,
        "content_text": text_,
        "record": stored,
    }
    append_events(conn, transition.events)
    if found is None:
        key = conn.execute(
            insert(records).values(memory_id=record.memory_id, **values)
        ).inserted_primary_key
        assert key is not None
        return reindex(conn, int(key[0]), record, text_)
    conn.execute(update(records).where(records.c.row_id == found[0]).values(**values))
    if conn.dialect.name == "postgresql":
        # PostgreSQL derives ``tsv`` from ``content_text``: emptying the text empties the entry.
        return int(bool(found[1]) and not text_)
    return reindex(conn, int(found[0]), record, text_)


def reindex(conn: Connection, row_id: int, record: MemoryRecord, text_: str) -> int:
    """SQLite: only published rows are searchable; returns index entries dropped for good."""
    if conn.dialect.name == "postgresql":
        return 0
    removed = conn.execute(text(f"DELETE FROM {FTS_TABLE} WHERE rowid = :r"), {"r": row_id})
    if record.state == "published":
        conn.execute(
            text(f"INSERT INTO {FTS_TABLE}(rowid, content_text) VALUES (:r, :t)"),
            {"r": row_id, "t": text_},
        )
        return 0
    return int(removed.rowcount or 0)


def append_events(conn: Connection, new: Iterable[MemoryEvent]) -> None:
    for event in new:
        last = conn.execute(
            select(func.coalesce(func.max(events.c.seq), 0)).where(
                events.c.memory_id == event.memory_id
            )
        ).scalar_one()
        conn.execute(
            insert(events).values(
                memory_id=event.memory_id,
                seq=int(last) + 1,
                kind=event.kind,
                actor=event.actor,
                at=utc(event.at),
                detail=event.detail,
            )
        )


def history(conn: Connection, memory_id: str) -> list[MemoryEvent]:
    rows = conn.execute(
        select(events).where(events.c.memory_id == memory_id).order_by(events.c.seq)
    ).mappings()
    return [
        MemoryEvent(
            memory_id=r["memory_id"],
            kind=r["kind"],
            at=aware(r["at"]),
            actor=r["actor"],
            detail=r["detail"],
        )
        for r in rows
    ]


def purge_artifacts(
    conn: Connection, tenant_id: str, user_id: str | None, memory_ids: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Drop caches and summaries derived from these memories or cached for this scope.

    A tenant-wide memory can sit in every user's cache, so its scope is the whole tenant."""
    ids = list(memory_ids)
    derived = conn.execute(
        select(derivations.c.artifact)
        .distinct()
        .where(derivations.c.memory_id.in_(bindparam("ids", expanding=True))),
        {"ids": ids},
    ).scalars()
    artifacts = set(derived)
    scope = [cache.c.tenant_id == tenant_id]
    if user_id is not None:
        scope.append(cache.c.user_id == user_id)
    artifacts |= {
        f"cache:{k}" for k in conn.execute(select(cache.c.cache_key).where(*scope)).scalars()
    }
    s_scope = [summaries.c.tenant_id == tenant_id]
    if user_id is not None:
        s_scope.append(summaries.c.user_id == user_id)
    artifacts |= {
        f"summary:{k}"
        for k in conn.execute(select(summaries.c.summary_id).where(*s_scope)).scalars()
    }
    caches = sorted(a.removeprefix("cache:") for a in artifacts if a.startswith("cache:"))
    kept = sorted(a.removeprefix("summary:") for a in artifacts if a.startswith("summary:"))
    if caches:
        conn.execute(delete(cache).where(cache.c.cache_key.in_(caches)))
    if kept:
        conn.execute(delete(summaries).where(summaries.c.summary_id.in_(kept)))
    if artifacts:
        conn.execute(delete(derivations).where(derivations.c.artifact.in_(sorted(artifacts))))
    return caches, kept


def scope_filter(tenant_id: str, user_id: str) -> list[Any]:
    return [
        records.c.tenant_id == tenant_id,
        or_(records.c.user_id == user_id, records.c.user_id == NO_USER),
    ]
