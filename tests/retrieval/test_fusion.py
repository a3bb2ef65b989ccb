"""What a fusion takes from full-text search: hits matching most of the query's terms, at the rank
full-text gave them; a paraphrase's one-word coincidences are left to the semantic retriever."""

from __future__ import annotations

import os

import pytest

from agentledger.activities.retrieval import (
    PassageHit,
    RetrievalReason,
    SqlRetriever,
    semantic_installed,
)
from agentledger.activities.retrieval._fusion import K, fuse
from agentledger.activities.retrieval._search import Filters, search
from tests.retrieval.conftest import NOW

SMASHED = "my package came smashed, can I get my money back?"
DAMAGED = "returns-2026-08#damaged-items"
LATE = "returns-2026-08#late-delivery"

needs_semantic = pytest.mark.skipif(
    not semantic_installed() and not os.environ.get("CI"),
    reason="the semantic extra is not installed",
)


def _ids(hits: list[PassageHit]) -> list[str]:
    return [h.source_id for h in hits]


def test_full_text_for_a_fusion_keeps_hits_matching_most_terms_at_their_own_rank(
    retriever: SqlRetriever,
) -> None:
    """Of "late delivery photo", the late-delivery and delivery-times clauses match two terms,
    damaged-items only one ("photo")."""
    query = "late delivery photo"
    with retriever.engine.connect() as conn:
        every = search(conn, query, 10, Filters("acme", NOW))
        most = search(conn, query, 10, Filters("acme", NOW), most_terms=True)
    assert DAMAGED in _ids(every)
    assert sorted(_ids(most)) == [LATE, "shipping-2026-03#delivery-times"]
    kept = [h for h in every if h.source_id != DAMAGED]
    assert most == kept  # each at its rank among all full-text hits, with its score


def test_a_query_in_the_policys_own_words_keeps_every_hit_that_matches_it(
    retriever: SqlRetriever,
) -> None:
    query = "damaged items photo"
    with retriever.engine.connect() as conn:
        most = search(conn, query, 10, Filters("acme", NOW), most_terms=True)
    assert _ids(most) == [DAMAGED]
    assert most[0].retrieved_by[0].rank == 1


def test_the_english_stop_words_postgres_drops_do_not_count_against_a_passage(
    retriever: SqlRetriever,
) -> None:
    """PostgreSQL's English configuration drops "again" and "before" from a query, so two of
    two terms match; SQLite's index keeps every word, so there two of four do, not most."""
    query = "late delivery again before"
    with retriever.engine.connect() as conn:
        most = search(conn, query, 10, Filters("acme", NOW), most_terms=True)
        postgres = conn.dialect.name == "postgresql"
    expected = [LATE, "shipping-2026-03#delivery-times"] if postgres else []
    assert sorted(_ids(most)) == expected


def test_fusion_adds_up_the_ranks_each_retriever_recorded() -> None:
    def hit(source_id: str, *reasons: tuple[str, int]) -> PassageHit:
        return PassageHit(
            source_id=source_id,
            document_id="d",
            revision="v1",
            anchor=source_id,
            title=source_id,
            text="",
            content_hash="sha256:0",
            tenant_id="*",
            retrieved_by=tuple(
                RetrievalReason(retriever=r, rank=n, score=1.0)  # type: ignore[arg-type]
                for r, n in reasons
            ),
        )

    lexical = [hit("b", ("fulltext", 4))]  # ranks 1-3 were left out of the fusion
    semantic = [hit("a", ("semantic", 1)), hit("b", ("semantic", 2))]
    fused = fuse([lexical, semantic], limit=2)
    assert [(h.source_id, h.score) for h in fused] == [
        ("b", pytest.approx(1 / (K + 4) + 1 / (K + 2))),
        ("a", pytest.approx(1 / (K + 1))),
    ]
    assert [(r.retriever, r.rank) for r in fused[0].retrieved_by] == [
        ("fulltext", 4),
        ("semantic", 2),
    ]


@needs_semantic
def test_a_one_word_full_text_coincidence_does_not_outrank_the_semantic_answer(
    retriever: SqlRetriever,
) -> None:
    """Full-text's only hit for the paraphrase is late-delivery, on "back" ("paid back") alone;
    fused with it at full weight it came first, above the damaged-items clause semantic search
    ranks first."""
    lexical = retriever.search(SMASHED, tenant_id="acme", now=NOW, mode="fulltext")
    assert _ids(lexical) == [LATE]
    fused = retriever.search(SMASHED, tenant_id="acme", now=NOW, limit=5, mode="fused")
    assert fused[0].source_id == DAMAGED
    assert all(r.retriever == "semantic" for h in fused for r in h.retrieved_by)
