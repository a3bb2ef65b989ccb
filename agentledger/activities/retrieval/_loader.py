"""Loading Markdown files as document revisions: the ``docs add`` command and pack seeding."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine

from agentledger.activities.retrieval._markdown import parse_markdown
from agentledger.activities.retrieval._model import GLOBAL_TENANT, PolicyDocument
from agentledger.activities.retrieval._store import SqlRetriever
from agentledger.activities.retrieval._tables import install

ALWAYS = datetime(2000, 1, 1, tzinfo=UTC)
"""Effective-from for documents shipped with a pack: in force before any run they govern."""


def add_markdown(
    retriever: SqlRetriever,
    path: Path,
    *,
    document_id: str,
    revision: str,
    tenant_id: str = GLOBAL_TENANT,
    effective_from: datetime,
    now: datetime,
    approved_by: str | None = None,
) -> PolicyDocument:
    """Load one file as one revision; approve it too when ``approved_by`` is given."""
    parsed = parse_markdown(path.read_text(encoding="utf-8"), default_title=document_id)
    retriever.add_document(
        parsed,
        tenant_id=tenant_id,
        document_id=document_id,
        revision=revision,
        effective_from=effective_from,
        now=now,
    )
    if approved_by is not None:
        return retriever.approve(tenant_id, document_id, revision, approved_by=approved_by)
    (doc,) = [d for d in retriever.revisions(tenant_id, document_id) if d.revision == revision]
    return doc


def ensure_documents(
    engine: Engine,
    directory: Path,
    *,
    tenant_id: str = GLOBAL_TENANT,
    approved_by: str = "pack",
) -> list[PolicyDocument]:
    """Install the tables and keep every ``*.md`` in ``directory`` (id = file stem) current.

    A file first seen becomes ``v1``, in force since ``ALWAYS``; a file whose content differs
    from the latest stored revision becomes the next revision (``v2``, …), approved and in force
    from now, so it supersedes the old one in search while the old one stays readable for
    audit. An unchanged file is a no-op, so every worker may call this at start."""
    install(engine)
    retriever = SqlRetriever(engine)
    now = datetime.now(UTC)
    return [
        _ensure(retriever, path, tenant_id, approved_by, now)
        for path in sorted(directory.glob("*.md"))
    ]


def _ensure(
    retriever: SqlRetriever, path: Path, tenant_id: str, approved_by: str, now: datetime
) -> PolicyDocument:
    parsed = parse_markdown(path.read_text(encoding="utf-8"), default_title=path.stem)
    stored = retriever.revisions(tenant_id, path.stem)
    if stored and stored[-1].content_hash == parsed.content_hash:
        return stored[-1]
    revision = f"v{len(stored) + 1}"
    retriever.add_document(
        parsed,
        tenant_id=tenant_id,
        document_id=path.stem,
        revision=revision,
        effective_from=now if stored else ALWAYS,
        now=now,
    )
    return retriever.approve(tenant_id, path.stem, revision, approved_by=approved_by)
