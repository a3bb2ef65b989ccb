"""A retriever over a fresh database per backend, with the support pack's policies loaded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.retrieval import SqlRetriever, ensure_documents, parse_markdown
from agentledger.packs.support.policies import POLICY_DIR

NOW = datetime(2026, 8, 24, 14, tzinfo=UTC)
LATE = "late delivery refund eligibility"
RETURNS = (POLICY_DIR / "returns-2026-08.md").read_text(encoding="utf-8")


@pytest.fixture
def retriever(database_url: str) -> Iterator[SqlRetriever]:
    engine = build_engine(database_url)
    ensure_documents(engine, POLICY_DIR)
    yield SqlRetriever(engine)
    engine.dispose()


def add_revision(
    r: SqlRetriever,
    revision: str,
    text: str,
    *,
    tenant: str = "*",
    effective_from: datetime = NOW - timedelta(days=1),
) -> None:
    """Store ``text`` as a draft revision of the returns policy."""
    r.add_document(
        parse_markdown(text),
        tenant_id=tenant,
        document_id="returns-2026-08",
        revision=revision,
        effective_from=effective_from,
        now=NOW,
    )
