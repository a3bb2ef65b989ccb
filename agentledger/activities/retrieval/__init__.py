"""Versioned policy documents, full-text and semantic retrieval on SQLite and PostgreSQL.

``Retriever`` is the port a tool calls; ``SqlRetriever`` implements it on either backend and adds
the document operations (add a revision, approve, withdraw). Passages carry stable anchors
(``returns-2026-08#late-delivery``), a content hash and trust ``approved_policy``; only approved
revisions effective at ``now`` and visible to the tenant are ever returned.

Full-text (SQLite FTS5, PostgreSQL ``tsvector``) is the default. With the ``semantic`` extra a
search can also rank by sentence embeddings (all-MiniLM-L6-v2, int8 ONNX, offline) or fuse both by
reciprocal rank (``configure_retrieval``; the shell reads ``AGENTLEDGER_RETRIEVAL``).
"""

from datetime import datetime

from sqlalchemy import Engine

from agentledger.activities._terms import query_terms
from agentledger.activities.retrieval._embedder import (
    MODEL_ID,
    Embedder,
    semantic_installed,
    shared_embedder,
)
from agentledger.activities.retrieval._loader import ALWAYS, add_markdown, ensure_documents
from agentledger.activities.retrieval._markdown import ParsedDocument, ParsedPassage, parse_markdown
from agentledger.activities.retrieval._model import (
    GLOBAL_TENANT,
    DocumentConflict,
    DocumentNotFound,
    EmbeddingModelError,
    PassageHit,
    PolicyDocument,
    RetrievalError,
    RetrievalMode,
    RetrievalReason,
    Retriever,
    SemanticUnavailable,
)
from agentledger.activities.retrieval._modes import active_mode, check_mode, configure_retrieval
from agentledger.activities.retrieval._store import SqlRetriever
from agentledger.activities.retrieval._tables import install
from agentledger.domain.tools import EvidencePassage

__all__ = [
    "ALWAYS",
    "GLOBAL_TENANT",
    "MODEL_ID",
    "DocumentConflict",
    "DocumentNotFound",
    "Embedder",
    "EmbeddingModelError",
    "ParsedDocument",
    "ParsedPassage",
    "PassageHit",
    "PolicyDocument",
    "RetrievalError",
    "RetrievalMode",
    "RetrievalReason",
    "Retriever",
    "SemanticUnavailable",
    "SqlRetriever",
    "active_mode",
    "add_markdown",
    "check_mode",
    "configure_retrieval",
    "ensure_documents",
    "install",
    "parse_markdown",
    "query_terms",
    "search_evidence",
    "search_passages",
    "semantic_installed",
    "shared_embedder",
]


def search_evidence(
    engine: Engine, query: str, *, tenant_id: str, now: datetime, limit: int = 3
) -> tuple[EvidencePassage, ...]:
    """What a policy search tool returns: the top passages as evidence, best first."""
    return tuple(hit.evidence() for hit in search_passages(engine, query, tenant_id, now, limit))


def search_passages(
    engine: Engine, query: str, tenant_id: str, now: datetime, limit: int = 3
) -> list[PassageHit]:
    """The top passages with why each was retrieved (retriever, rank, score), best first."""
    return SqlRetriever(engine).search(query, tenant_id=tenant_id, now=now, limit=limit)
