"""Values the retrieval port speaks in: documents, passages, hits, and its errors."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from agentledger.domain.tools import EvidencePassage

ApprovalState = Literal["draft", "approved", "withdrawn"]
RetrieverName = Literal["fulltext", "semantic"]
RetrievalMode = Literal["fulltext", "semantic", "fused"]
RETRIEVAL_MODES: tuple[RetrievalMode, ...] = ("fulltext", "semantic", "fused")
GLOBAL_TENANT = "*"
"""Documents every tenant may read (a pack's shipped policies)."""


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PolicyDocument(_Value):
    """One revision of one document. Revisions are immutable; a change is a new revision."""

    tenant_id: str
    document_id: str
    revision: str
    title: str
    effective_from: datetime
    effective_to: datetime | None = None
    approval_state: ApprovalState = "draft"
    approved_by: str | None = None
    content_hash: str = ""
    superseded_by: str | None = None


class RetrievalReason(_Value):
    """Why a passage was retrieved: which retriever ranked it where, with what score (bm25 or
    ts_rank for full-text, cosine similarity for semantic)."""

    retriever: RetrieverName
    rank: int
    score: float


class PassageHit(_Value):
    """A passage with the exact revision and hash it came from; ``score`` is backend-specific."""

    source_id: str
    document_id: str
    revision: str
    anchor: str
    title: str
    text: str
    content_hash: str
    tenant_id: str
    trust: Literal["approved_policy"] = "approved_policy"
    score: float = 0.0
    """The retriever's own score; for a fused hit, its reciprocal-rank-fusion score."""
    retrieved_by: tuple[RetrievalReason, ...] = ()

    def evidence(self) -> EvidencePassage:
        return EvidencePassage(
            source_id=self.source_id,
            revision=self.revision,
            content_hash=self.content_hash,
            trust=self.trust,
            title=self.title,
            text=self.text,
            score=round(self.score, 4),
        )


class Retriever(Protocol):
    """The port a policy search tool calls: approved, effective, tenant-visible passages only."""

    def search(
        self, query: str, *, tenant_id: str, now: datetime, limit: int = 3
    ) -> list[PassageHit]: ...

    def passage(self, source_id: str, revision: str, *, tenant_id: str) -> PassageHit | None:
        """Any stored revision, approved or not, for audit: "what did run X cite?"."""
        ...


class RetrievalError(Exception):
    """Base of retrieval errors::

    RetrievalError
    ├── DocumentConflict      a stored revision already has different content
    ├── DocumentNotFound      no such document revision for this tenant
    ├── SemanticUnavailable   semantic retrieval asked for without the ``semantic`` extra
    └── EmbeddingModelError   the embedding model or its vocabulary is not the pinned file
    """


class DocumentConflict(RetrievalError):
    pass


class DocumentNotFound(RetrievalError):
    pass


class SemanticUnavailable(RetrievalError):
    pass


class EmbeddingModelError(RetrievalError):
    pass
