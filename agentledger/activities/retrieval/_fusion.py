"""Reciprocal rank fusion of full-text and semantic results.

Each retriever's ranks, not its scores, are combined: bm25 (or ts_rank) and cosine similarity are
on unrelated scales, while a rank means the same in both. A passage's fused score is the sum of
``1 / (K + rank)`` over the retrievers that returned it (Cormack, Clarke and Büttcher, 2009), so a
passage both rank well beats one only one of them likes, and one neither found is never added.
The rank is the one the retriever recorded on the hit (a full-text hit keeps its rank among all
full-text hits when the fusion leaves out those matching few of the query's terms), so the
fused score is computed from exactly what the hit's reasons say. The fused hit keeps every
retriever's reason: which one ranked it where, with what score.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentledger.activities.retrieval._model import PassageHit, RetrievalReason

K = 60
"""The constant of the original paper; it damps the difference between the first few ranks."""


def fuse(rankings: Sequence[Sequence[PassageHit]], limit: int) -> list[PassageHit]:
    """The ``limit`` best passages over ``rankings`` (each best first), best first; ties by
    source id and revision, so equal inputs always give the same order."""
    scores: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], PassageHit] = {}
    reasons: dict[tuple[str, str], list[RetrievalReason]] = {}
    for ranking in rankings:
        for hit in ranking:
            key = (hit.source_id, hit.revision)
            scores[key] = scores.get(key, 0.0) + sum(1.0 / (K + r.rank) for r in hit.retrieved_by)
            first.setdefault(key, hit)
            reasons.setdefault(key, []).extend(hit.retrieved_by)
    order = sorted(scores, key=lambda key: (-scores[key], key))[:limit]
    return [
        first[key].model_copy(update={"score": scores[key], "retrieved_by": tuple(reasons[key])})
        for key in order
    ]
