"""Semantic search: the same filters as full-text first, then cosine similarity in numpy.

The filters (tenant or global, approved, effective at ``now``) select the passage rows a search
may see *before* anything is ranked. They are evaluated in numpy over a per-process copy of the
passages' filter columns, valid while ``retrieval_generation`` (bumped by every write that adds
passages or changes which are in force) is unchanged: reading 10,000 ids through SQL per query
would cost more than the whole ranking. Filtering first means another tenant's passage or a
superseded revision can never outrank, displace or appear among the results. The admitted
passages' vectors are then compared by brute force: at 10,000 passages a single-threaded
matrix-vector product takes about half a millisecond (``python -m bench.semantic``).

A vector belongs to one passage row (one revision) and one model id and never changes, so each
process keeps the vectors it has read in memory, per engine; rows not embedded yet (loaded before
semantic retrieval was switched on, or by a process without the extra) are embedded on first
search and stored.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine, select

from agentledger.activities._sql import WRITE_OPTIONS, insert_missing
from agentledger.activities._terms import aware, utc
from agentledger.activities.retrieval._embedder import DIMENSIONS, Embedder
from agentledger.activities.retrieval._model import GLOBAL_TENANT, PassageHit, RetrievalReason
from agentledger.activities.retrieval._search import Filters
from agentledger.activities.retrieval._tables import current_generation, embeddings, passages
from agentledger.domain.canonical import sha256_hex

_CHUNK = 500
"""Ids per ``IN (...)`` when reading or embedding rows the cache lacks."""


class _Vectors:
    """One engine's vectors of one model: a growing float32 matrix, and the matrix row of each
    passage id (``-1``: not loaded), as an array so that a query maps ids to rows in one step."""

    def __init__(self) -> None:
        self.row_of = np.full(0, -1, dtype=np.int64)
        self.matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.lock = threading.Lock()

    def rows(self, ids: Any) -> Any:
        """The matrix rows of ``ids`` (an int64 array), ``-1`` where not loaded."""
        row_of = self.row_of  # replaced, never changed in place: a consistent snapshot
        if not len(row_of):
            return np.full(len(ids), -1, dtype=np.int64)
        inside = ids < len(row_of)
        return np.where(inside, row_of[np.where(inside, ids, 0)], -1)

    def add(self, ids: Sequence[int], vectors: Any) -> None:
        with self.lock:
            known = self.rows(np.asarray(ids, dtype=np.int64))
            fresh = [(i, v) for i, v, row in zip(ids, vectors, known, strict=True) if row < 0]
            if not fresh:
                return
            start = len(self.matrix)
            matrix = np.vstack([self.matrix, np.stack([v for _, v in fresh])])
            row_of = np.full(max(len(self.row_of), max(i for i, _ in fresh) + 1), -1, np.int64)
            row_of[: len(self.row_of)] = self.row_of
            row_of[[i for i, _ in fresh]] = np.arange(start, start + len(fresh))
            self.matrix = matrix  # before row_of: a reader never sees a row beyond the matrix
            self.row_of = row_of


@dataclass(frozen=True)
class _FilterTable:
    """Every passage row's filter columns as arrays, as of one ``retrieval_generation``."""

    generation: int
    ids: Any
    tenants: Any
    approved: Any
    effective_from: Any
    effective_until: Any

    def admitted(self, filters: Filters) -> Any:
        """The ids the search filters admit, as ``_search``'s SQL filters would."""
        now = utc(filters.now).timestamp()
        mask = (self.tenants == filters.tenant_id) | (self.tenants == GLOBAL_TENANT)
        mask &= self.approved & (self.effective_from <= now) & (self.effective_until > now)
        return self.ids[mask]


_CACHES: weakref.WeakKeyDictionary[Engine, dict[str, _Vectors]] = weakref.WeakKeyDictionary()
_TABLES: weakref.WeakKeyDictionary[Engine, _FilterTable] = weakref.WeakKeyDictionary()


def _cache(engine: Engine, model_id: str) -> _Vectors:
    return _CACHES.setdefault(engine, {}).setdefault(model_id, _Vectors())


def _filter_table(engine: Engine) -> _FilterTable:
    """The cached filter columns while the generation is unchanged, else read afresh. The
    generation is read first, so the rows read after it are at least as new as it says."""
    with engine.connect() as conn:
        current = current_generation(conn)
        cached = _TABLES.get(engine)
        if cached is not None and cached.generation == current:
            return cached
        p = passages.c
        rows = conn.execute(
            select(p.passage_id, p.tenant_id, p.approved, p.effective_from, p.effective_until)
        ).all()
    table = _FilterTable(
        generation=current,
        ids=np.array([r[0] for r in rows], dtype=np.int64),
        tenants=np.array([r[1] for r in rows], dtype=object),
        approved=np.array([bool(r[2]) for r in rows], dtype=bool),
        effective_from=np.array([_epoch(r[3]) for r in rows], dtype=np.float64),
        effective_until=np.array([_epoch(r[4]) for r in rows], dtype=np.float64),
    )
    _TABLES[engine] = table
    return table


def _epoch(at: datetime | None) -> float:
    return math.inf if at is None else utc(aware(at)).timestamp()


def search(
    engine: Engine, embedder: Embedder, query: str, limit: int, filters: Filters
) -> list[PassageHit]:
    """The ``limit`` passages most similar to ``query`` among those ``filters`` admit."""
    if not query.strip() or limit <= 0:
        return []
    ids = _filter_table(engine).admitted(filters)
    if not len(ids):
        return []
    vectors = _cache(engine, embedder.model_id)
    rows = vectors.rows(ids)
    if (rows < 0).any():
        ensure_embedded(engine, embedder, ids[rows < 0].tolist())
        rows = vectors.rows(ids)
    query_vector = embedder.embed([query])[0]
    # Every cached vector is scored (one matrix-vector product, cheaper than copying out the
    # admitted rows first), but only the admitted rows' scores are ranked. einsum, not BLAS:
    # a single-threaded product does not fight the worker's other threads for the cores.
    scores = np.einsum("ij,j->i", vectors.matrix, query_vector)[rows]
    top = _top(scores, limit)
    ranked = [(int(ids[n]), float(scores[n])) for n in top]
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
