"""Semantic search: the same filters as full-text first, then cosine similarity in numpy.

The filters (tenant or global, approved, effective at ``now``) select the passage rows a search
may see *before* anything is ranked, so another tenant's passage or a superseded revision can
never outrank, displace or appear among the results. Their vectors are then compared by brute
force: at 10,000 passages a matrix-vector product is well under a millisecond
(``python -m bench.semantic``).

A vector belongs to one passage row (one revision) and one model id and never changes, so each
process keeps the vectors it has read in memory, per engine; rows not embedded yet (loaded before
semantic retrieval was switched on, or by a process without the extra) are embedded on first
search and stored.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, bindparam, select, text

from agentledger.activities._sql import WRITE_OPTIONS, insert_missing
from agentledger.activities._terms import utc
from agentledger.activities.retrieval._embedder import DIMENSIONS, Embedder
from agentledger.activities.retrieval._model import GLOBAL_TENANT, PassageHit, RetrievalReason
from agentledger.activities.retrieval._search import Filters
from agentledger.activities.retrieval._tables import embeddings, passages
from agentledger.domain.canonical import sha256_hex

_ELIGIBLE = text(
    "SELECT p.passage_id FROM retrieval_passages p"
    " WHERE p.tenant_id IN (:tenant, :global_tenant) AND p.approved"
    " AND p.effective_from <= :now AND (p.effective_until IS NULL OR p.effective_until > :now)"
)
_CHUNK = 500
"""Ids per ``IN (...)`` when reading or embedding rows the cache lacks."""


class _Vectors:
    """One engine's vectors of one model: a growing float32 matrix and its row per passage."""

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}
        self.matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.lock = threading.Lock()

    def add(self, ids: Sequence[int], vectors: Any) -> None:
        with self.lock:
            fresh = [(i, v) for i, v in zip(ids, vectors, strict=True) if i not in self.rows]
            if not fresh:
                return
            start = len(self.matrix)
            self.matrix = np.vstack([self.matrix, np.stack([v for _, v in fresh])])
            self.rows.update((i, start + n) for n, (i, _) in enumerate(fresh))


_CACHES: weakref.WeakKeyDictionary[Engine, dict[str, _Vectors]] = weakref.WeakKeyDictionary()


def _cache(engine: Engine, model_id: str) -> _Vectors:
    return _CACHES.setdefault(engine, {}).setdefault(model_id, _Vectors())


def search(
    engine: Engine, embedder: Embedder, query: str, limit: int, filters: Filters
) -> list[PassageHit]:
    """The ``limit`` passages most similar to ``query`` among those ``filters`` admit."""
    if not query.strip() or limit <= 0:
        return []
    with engine.connect() as conn:
        ids = _eligible(conn, filters)
    if not ids:
        return []
    vectors = _cache(engine, embedder.model_id)
    missing = [i for i in ids if i not in vectors.rows]
    if missing:
        ensure_embedded(engine, embedder, missing)
    query_vector = embedder.embed([query])[0]
    rows = np.fromiter((vectors.rows[i] for i in ids), dtype=np.int64, count=len(ids))
    # Every cached vector is scored (one matrix-vector product, cheaper than copying out the
    # eligible rows first), but only the eligible rows' scores are ranked.
    scores = (vectors.matrix @ query_vector)[rows]
    top = _top(scores, limit)
    ranked = [(ids[n], float(scores[n])) for n in top]
    return _hits(engine, ranked)


def ensure_embedded(engine: Engine, embedder: Embedder, passage_ids: Sequence[int]) -> None:
    """Load the stored vectors of ``passage_ids`` into the cache; embed and store the rest."""
    vectors = _cache(engine, embedder.model_id)
    for start in range(0, len(passage_ids), _CHUNK):
        chunk = list(passage_ids[start : start + _CHUNK])
        stored = _stored(engine, embedder.model_id, chunk)
        vectors.add(list(stored), list(stored.values()))
        todo = [i for i in chunk if i not in stored]
        if todo:
            new = _embed_rows(engine, embedder, todo)
            vectors.add(list(new), list(new.values()))


def _eligible(conn: Connection, filters: Filters) -> list[int]:
    statement = _ELIGIBLE.bindparams(bindparam("now", type_=passages.c.effective_from.type))
    params = {"tenant": filters.tenant_id, "global_tenant": GLOBAL_TENANT, "now": utc(filters.now)}
    return [int(i) for (i,) in conn.execute(statement, params)]


def _stored(engine: Engine, model_id: str, ids: list[int]) -> dict[int, Any]:
    e = embeddings.c
    with engine.connect() as conn:
        found = conn.execute(
            select(e.passage_id, e.vector).where(e.model_id == model_id, e.passage_id.in_(ids))
        ).all()
    return {int(i): np.frombuffer(v, dtype="<f4") for i, v in found}


def _embed_rows(engine: Engine, embedder: Embedder, ids: list[int]) -> dict[int, Any]:
    p = passages.c
    with engine.connect() as conn:
        rows = conn.execute(
            select(p.passage_id, p.tenant_id, p.source_id, p.revision, p.content_hash)
            .add_columns(p.title, p.text)
            .where(p.passage_id.in_(ids))
        ).all()
    # A text already embedded (an unchanged passage of a new revision, another tenant's copy,
    # a repeat within this batch) reuses its vector; only new texts run the model.
    texts = [passage_text(r.title, r.text) for r in rows]
    hashes = [sha256_hex(t) for t in texts]
    by_hash = _stored_by_text(engine, embedder.model_id, set(hashes))
    new = {h: t for h, t in zip(hashes, texts, strict=True) if h not in by_hash}
    by_hash |= dict(zip(new, _batched(embedder, list(new.values())), strict=True))
    vectors = [by_hash[h] for h in hashes]
    records = [
        {
            "passage_id": r.passage_id,
            "model_id": embedder.model_id,
            "tenant_id": r.tenant_id,
            "source_id": r.source_id,
            "revision": r.revision,
            "content_hash": r.content_hash,
            "embedded_hash": h,
            "dimensions": DIMENSIONS,
            "vector": v.astype("<f4").tobytes(),
        }
        for r, h, v in zip(rows, hashes, vectors, strict=True)
    ]
    with engine.connect() as conn, conn.execution_options(**WRITE_OPTIONS).begin():
        insert_missing(conn, embeddings, records)  # another worker may have stored them first
    return {int(r.passage_id): v for r, v in zip(rows, vectors, strict=True)}


def _stored_by_text(engine: Engine, model_id: str, hashes: set[str]) -> dict[str, Any]:
    e = embeddings.c
    with engine.connect() as conn:
        found = conn.execute(
            select(e.embedded_hash, e.vector).where(
                e.model_id == model_id, e.embedded_hash.in_(sorted(hashes))
            )
        ).all()
    return {str(h): np.frombuffer(v, dtype="<f4") for h, v in found}


def _batched(embedder: Embedder, texts: list[str], size: int = 32) -> list[Any]:
    """Batches of similar length: padding to a long passage would slow every short one."""
    order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
    out: list[Any] = [None] * len(texts)
    for start in range(0, len(order), size):
        part = order[start : start + size]
        for n, vector in zip(part, embedder.embed([texts[n] for n in part]), strict=True):
            out[n] = vector
    return out


def passage_text(title: str, body: str) -> str:
    """What is embedded: the heading names what the clause is about."""
    return f"{title}. {body}"


def _top(scores: Any, limit: int) -> list[int]:
    """Indices of the ``limit`` highest scores, best first (ties in eligible order)."""
    if len(scores) > limit:
        part = np.argpartition(-scores, limit - 1)[:limit]
    else:
        part = np.arange(len(scores))
    return sorted(part.tolist(), key=lambda n: (-float(scores[n]), n))


def _hits(engine: Engine, ranked: list[tuple[int, float]]) -> list[PassageHit]:
    p = passages.c
    with engine.connect() as conn:
        rows = {
            r["passage_id"]: r
            for r in conn.execute(
                select(p.passage_id, p.source_id, p.document_id, p.revision, p.anchor, p.title)
                .add_columns(p.text, p.content_hash, p.tenant_id)
                .where(p.passage_id.in_([i for i, _ in ranked]))
            ).mappings()
        }
    return [
        PassageHit(
            **{k: v for k, v in rows[i].items() if k != "passage_id"},
            score=score,
            retrieved_by=(RetrievalReason(retriever="semantic", rank=rank, score=score),),
        )
        for rank, (i, score) in enumerate(ranked, start=1)
    ]
