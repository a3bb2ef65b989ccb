"""Versioned policy documents and full-text retrieval on SQLite (FTS5) and PostgreSQL.

``Retriever`` is the port a tool calls; ``SqlRetriever`` implements it on either backend and adds
the document operations (add a revision, approve, withdraw). Passages carry stable anchors
(``returns-2026-08#late-delivery``), a content hash and trust ``approved_policy``; only approved
revisions effective at ``now`` and visible to the tenant are ever returned.
"""

from datetime import datetime

from sqlalchemy import Engine

from agentledger.activities._terms import query_terms
from agentledger.activities.retrieval._loader import ALWAYS, add_markdown, ensure_documents
from agentledger.activities.retrieval._markdown import ParsedDocument, ParsedPassage, parse_markdown
from agentledger.activities.retrieval._model import (
    GLOBAL_TENANT,
    DocumentConflict,
    DocumentNotFound,
    PassageHit,
    PolicyDocument,
    RetrievalError,
    Retriever,
)
from agentledger.activities.retrieval._store import SqlRetriever
from agentledger.activities.retrieval._tables import install
from agentledger.domain.tools import EvidencePassage

__all__ = [
    "ALWAYS",
    "GLOBAL_TENANT",
    "DocumentConflict",
    "DocumentNotFound",
    "ParsedDocument",
    "ParsedPassage",
    "PassageHit",
    "PolicyDocument",
    "RetrievalError",
    "Retriever",
    "SqlRetriever",
    "add_markdown",
    "ensure_documents",
    "install",
    "parse_markdown",
    "query_terms",
    "search_evidence",
]


def search_evidence(
    engine: Engine, query: str, *, tenant_id: str, now: datetime, limit: int = 3
) -> tuple[EvidencePassage, ...]:
    """What a policy search tool returns: the top passages as evidence, best first."""
    hits = SqlRetriever(engine).search(query, tenant_id=tenant_id, now=now, limit=limit)
    return tuple(hit.evidence() for hit in hits)
