"""Versioned policy retrieval: the contract, on SQLite (FTS5) and PostgreSQL (full text)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.retrieval import (
    DocumentConflict,
    SqlRetriever,
    ensure_documents,
    parse_markdown,
    search_evidence,
)
from agentledger.packs.support.policies import POLICY_DIR
from tests.retrieval.conftest import LATE, NOW, RETURNS, add_revision

GLOBEX_DOC = """# Globex returns
## Late delivery {#late-delivery}
Globex customers get store credit for late delivery, never a refund.
"""


def test_the_shipped_policies_are_approved_revisions_with_stable_anchors(
    retriever: SqlRetriever,
) -> None:
    (top, *_) = retriever.search(LATE, tenant_id="acme", now=NOW)

    assert top.source_id == "returns-2026-08#late-delivery"
    assert (top.revision, top.trust, top.anchor) == ("v1", "approved_policy", "late-delivery")
    assert top.text.startswith("Late deliveries qualify for a refund review within 30 days.")
    assert top.content_hash.startswith("sha256:") and top.score > 0
    assert retriever.current_revisions("acme", NOW) == {
        "returns-2026-08": "v1",
        "shipping-2026-03": "v1",
    }


def test_results_are_ranked_best_first_and_carry_what_a_citation_needs(
    retriever: SqlRetriever,
) -> None:
    evidence = search_evidence(
        retriever._engine, "orders in transit refund", tenant_id="acme", now=NOW
    )

    assert evidence[0].source_id == "shipping-2026-03#in-transit"
    assert [e.score for e in evidence] == sorted((e.score for e in evidence), reverse=True)
    assert all(e.revision == "v1" and e.trust == "approved_policy" for e in evidence)


def test_a_newer_approved_revision_supersedes_the_old_one_which_stays_readable_for_audit(
    retriever: SqlRetriever,
) -> None:
    add_revision(retriever, "v2", RETURNS.replace("within 30 days", "within 60 days"))
    before = retriever.search(LATE, tenant_id="acme", now=NOW)
    retriever.approve("*", "returns-2026-08", "v2", approved_by="ops_lead_1")
    after = retriever.search(LATE, tenant_id="acme", now=NOW)

    assert before[0].revision == "v1"  # a draft is never searchable
    returns = [(h.source_id, h.revision) for h in after if h.document_id == "returns-2026-08"]
    assert returns[0] == ("returns-2026-08#late-delivery", "v2")
    assert {revision for _, revision in returns} == {"v2"}
    assert "60 days" in after[0].text
    old = retriever.passage("returns-2026-08#late-delivery", "v1", tenant_id="acme")
    assert old is not None and "30 days" in old.text
    assert retriever.search(LATE, tenant_id="acme", now=NOW - timedelta(days=2))[0].revision == "v1"


def test_withdrawing_the_newer_revision_restores_the_older_one(retriever: SqlRetriever) -> None:
    add_revision(retriever, "v2", RETURNS.replace("30 days", "60 days"))
    retriever.approve("*", "returns-2026-08", "v2", approved_by="ops_lead_1")
    retriever.withdraw("*", "returns-2026-08", "v2")

    assert retriever.search(LATE, tenant_id="acme", now=NOW)[0].revision == "v1"


def test_a_revision_is_not_returned_before_it_takes_effect(retriever: SqlRetriever) -> None:
    add_revision(
        retriever, "v2", RETURNS.replace("30", "45"), effective_from=NOW + timedelta(days=7)
    )
    retriever.approve("*", "returns-2026-08", "v2", approved_by="ops_lead_1")

    assert retriever.search(LATE, tenant_id="acme", now=NOW)[0].revision == "v1"
    assert retriever.search(LATE, tenant_id="acme", now=NOW + timedelta(days=8))[0].revision == "v2"


def test_another_tenants_documents_never_appear(retriever: SqlRetriever) -> None:
    add_revision(retriever, "g1", GLOBEX_DOC, tenant="globex")
    retriever.approve("globex", "returns-2026-08", "g1", approved_by="ops_globex")

    acme = retriever.search("store credit late delivery", tenant_id="acme", now=NOW, limit=10)
    globex = retriever.search("store credit late delivery", tenant_id="globex", now=NOW, limit=10)

    assert all(h.tenant_id == "*" for h in acme)
    assert globex[0].tenant_id == "globex" and "store credit" in globex[0].text
    assert retriever.passage("returns-2026-08#late-delivery", "g1", tenant_id="acme") is None


def test_a_stored_revision_is_immutable_and_reloading_it_is_a_no_op(
    retriever: SqlRetriever, database_url: str
) -> None:
    engine = build_engine(database_url)
    assert ensure_documents(engine, POLICY_DIR)[0].approval_state == "approved"  # no-op
    engine.dispose()
    with pytest.raises(DocumentConflict):
        add_revision(retriever, "v1", RETURNS.replace("30 days", "90 days"))


@pytest.mark.parametrize("query", ['late" OR *', "NEAR(late delivery)", "'; DROP TABLE x; --", "a"])
def test_query_syntax_never_reaches_the_index(retriever: SqlRetriever, query: str) -> None:
    hits = retriever.search(query, tenant_id="acme", now=NOW)
    assert all(h.trust == "approved_policy" for h in hits)


def test_markdown_sections_become_passages_with_stable_anchors(tmp_path: Path) -> None:
    parsed = parse_markdown("# T\nintro\n## Late  delivery\nsome\n  text\n## Other {#x}\nmore\n")

    assert [(p.anchor, p.title, p.text) for p in parsed.passages] == [
        ("late-delivery", "Late  delivery", "some text"),
        ("x", "Other", "more"),
    ]
    with pytest.raises(ValueError, match="duplicate anchor"):
        parse_markdown("## A {#a}\none\n## B {#a}\ntwo\n")


def test_an_edited_shipped_policy_lands_as_the_next_revision(
    retriever: SqlRetriever, database_url: str, tmp_path: Path
) -> None:
    shipped = tmp_path / "returns-2026-08.md"
    shipped.write_text(RETURNS.replace("within 30 days", "within 45 days"), encoding="utf-8")
    engine = build_engine(database_url)
    (doc,) = ensure_documents(engine, tmp_path)
    (again,) = ensure_documents(engine, tmp_path)  # unchanged: a no-op
    engine.dispose()

    assert (doc.revision, doc.approval_state, again.revision) == ("v2", "approved", "v2")
    (top, *_) = retriever.search(LATE, tenant_id="acme", now=datetime.now(UTC))
    assert (top.revision, "45 days" in top.text) == ("v2", True)
    old = retriever.passage("returns-2026-08#late-delivery", "v1", tenant_id="acme")
    assert old is not None and "30 days" in old.text
