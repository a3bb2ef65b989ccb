"""Memory retrieval for context: always as the authenticated principal, always filtered.

Filters run in SQL (tenant, the user's own or tenant-wide scope, published only) and again in
``domain.memory`` (read rule, supersession, expiry), so a query bug cannot leak another user's
memory. Results are cached per principal scope; every lifecycle write purges the caches and
summaries derived from the memories it touches, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, bindparam, select, text

from agentledger.activities._sql import insert_missing, upsert
from agentledger.activities._terms import aware, fts5_query, query_terms, tsquery, utc
from agentledger.activities.memory import _persist as db
from agentledger.activities.memory._sealing import MemorySeal
from agentledger.activities.memory._tables import (
    FTS_TABLE,
    NO_USER,
    cache,
    derivations,
    records,
    summaries,
)
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import ContextItem
from agentledger.domain.memory import (
    MemoryCategory,
    MemoryHit,
    MemoryRecord,
    ProfileSummary,
    contradictions,
    hit,
    omission_reason,
    profile_summary,
)
from agentledger.domain.principal import Principal

CACHE_TTL = timedelta(minutes=5)
_FILTERS = " AND r.tenant_id = :tenant AND r.user_id IN (:user, :no_user) AND r.state = 'published'"
_SQLITE = (
    f"SELECT r.record, -bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} "
    f"JOIN memory_records r ON r.row_id = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH :q"
    f"{{filters}} ORDER BY bm25({FTS_TABLE}), r.memory_id LIMIT :k"
)
_POSTGRES = (
    "SELECT r.record, ts_rank(r.tsv, q) AS score FROM memory_records r, "
    "to_tsquery('english', :q) q WHERE r.tsv @@ q{filters} "
    "ORDER BY score DESC, r.memory_id LIMIT :k"
)


class MemoryOmission(BaseModel):
    model_config = ConfigDict(frozen=True)
    memory_id: str
    reason: str


class MemoryRetrieval(BaseModel):
    """Hits with citations and why, omissions with reasons, contradictions as explicit pairs."""

    model_config = ConfigDict(frozen=True)
    hits: tuple[MemoryHit, ...] = ()
    omitted: tuple[MemoryOmission, ...] = ()
    contradictions: tuple[tuple[str, str], ...] = ()
    profile: ProfileSummary | None = None
    from_cache: bool = False

    def context_items(self) -> list[ContextItem]:
        """The profile summary stands in for the preferences it summarises; the rest as-is."""
        summarised = set(self.profile.derived_from) if self.profile else set()
        items = [self.profile.item] if self.profile else []
        return items + [h.item for h in self.hits if h.item.id not in summarised]


def cache_key(principal: Principal, query: str, categories: Sequence[str], limit: int) -> str:
    return sha256_hex(
        {"scope": principal.scope_key(), "q": query, "c": sorted(categories), "k": limit}
    )


_CACHED = select(cache.c.payload).where(
    cache.c.cache_key == bindparam("key"),
    cache.c.created_at <= bindparam("at"),
    cache.c.valid_until > bindparam("at"),
)
"""Built once: every model step asks, and a statement rebuilt per call costs more than the query."""


def cached(conn: Connection, key: str, now: datetime, seal: MemorySeal) -> MemoryRetrieval | None:
    payload = conn.execute(_CACHED, {"key": key, "at": utc(now)}).scalar()
    if payload is None:
        return None
    return MemoryRetrieval.model_validate(
        {**seal.opened_payload(conn, payload), "from_cache": True}
    )


def compute(
    conn: Connection,
    principal: Principal,
    now: datetime,
    query: str,
    categories: Sequence[MemoryCategory],
    limit: int,
    seal: MemorySeal,
) -> MemoryRetrieval:
    terms = query_terms(query)
    rows = (
        search_index(conn, principal, terms, limit, seal)
        if terms
        else _recent(conn, principal, limit, seal)
    )
    hits, omitted, current = [], [], []
    for record, score in rows:
        if categories and record.category not in categories:
            continue
        reason = omission_reason(record, principal, now)
        if reason == "expired":
            omitted.append(MemoryOmission(memory_id=record.memory_id, reason=reason))
        elif reason is None:
            current.append(record)
            matched = [t for t in terms if t in db.content_text(record).lower()]
            hits.append(hit(record, principal, score or record.confidence, matched))
    wants_profile = not categories or "user_preference" in categories
    return MemoryRetrieval(
        hits=tuple(hits),
        omitted=tuple(omitted),
        contradictions=tuple(contradictions(current)),
        profile=profile_summary(current, principal, now) if wants_profile else None,
    )


def store(
    conn: Connection,
    key: str,
    principal: Principal,
    now: datetime,
    found: MemoryRetrieval,
    seal: MemorySeal,
) -> None:
    """Cache the result and persist its summary, each with the memories it derives from (both
    sealed under the principal's key where ``seal`` says; neither once their erasure began)."""
    sealing = seal.sealing_for(conn, principal)
    if sealing is None:
        return
    payload = sealing(found.model_dump(mode="json", exclude={"from_cache"}))
    expiries = [aware(h.item.expires_at) for h in found.hits if h.item.expires_at is not None]
    valid_until = min([now + CACHE_TTL, *[e for e in expiries if e is not None]])
    sources = {h.item.id for h in found.hits} | {o.memory_id for o in found.omitted}
    # Upserts: readers that miss the same key at once each store the (identical) result.
    row = {
        "cache_key": key,
        "tenant_id": principal.tenant_id,
        "user_id": principal.user_id,
        "payload": payload,
        "created_at": utc(now),
        "valid_until": utc(valid_until),
    }
    upsert(conn, cache, row, ["cache_key"])
    _derive(conn, f"cache:{key}", sources)
    if found.profile is not None:
        summary = sealing(found.profile.model_dump(mode="json"))
        _store_summary(conn, principal, now, found.profile, summary)


def _store_summary(
    conn: Connection, principal: Principal, now: datetime, profile: ProfileSummary, stored: Any
) -> None:
    summary_id = profile.item.id
    row = {
        "summary_id": summary_id,
        "tenant_id": principal.tenant_id,
        "user_id": principal.user_id,
        "payload": stored,
        "built_at": utc(now),
    }
    upsert(conn, summaries, row, ["summary_id"])
    _derive(conn, f"summary:{summary_id}", set(profile.derived_from))


def _derive(conn: Connection, artifact: str, memory_ids: set[str]) -> None:
    """Record what ``artifact`` derives from. The key (artifact, inputs) names the content, so
    the same derivation stored twice is one; purges delete by memory id."""
    rows = [{"artifact": artifact, "memory_id": m} for m in sorted(memory_ids)]
    insert_missing(conn, derivations, rows)


def _recent(
    conn: Connection, principal: Principal, limit: int, seal: MemorySeal
) -> list[tuple[MemoryRecord, float]]:
    rows = conn.execute(
        select(records.c.record)
        .where(*db.scope_filter(principal.tenant_id, principal.user_id))
        .where(records.c.state == "published")
        .order_by(records.c.row_id.desc())
        .limit(limit)
    ).scalars()
    return [(r, 0.0) for r in db.load_many(conn, rows, seal)]


def search_index(
    conn: Connection,
    principal: Principal | None,
    terms: list[str],
    limit: int,
    seal: MemorySeal,
) -> list[tuple[MemoryRecord, float]]:
    """Full-text search; ``principal=None`` drops every filter (benchmarks only: the words as
    typed, so it finds no sealed memory)."""
    postgres = conn.dialect.name == "postgresql"
    if principal is not None:
        terms = seal.search_terms(conn, principal, terms)
    params: dict[str, Any] = {"q": tsquery(terms) if postgres else fts5_query(terms), "k": limit}
    if principal is not None:
        params |= {"tenant": principal.tenant_id, "user": principal.user_id, "no_user": NO_USER}
    template = _POSTGRES if postgres else _SQLITE
    statement = text(template.format(filters=_FILTERS if principal is not None else ""))
    rows = conn.execute(statement.bindparams(bindparam("q")), params).all()
    # Raw SQL on SQLite returns JSON columns as text; psycopg parses them.
    found = seal.opened(conn, [r[0] if postgres else orjson.loads(r[0]) for r in rows])
    return [(record, float(r[1])) for record, r in zip(found, rows, strict=True)]


def search_all(
    conn: Connection, query: str, limit: int, seal: MemorySeal
) -> list[tuple[MemoryRecord, float]]:
    terms = query_terms(query)
    return search_index(conn, None, terms, limit, seal) if terms else []
