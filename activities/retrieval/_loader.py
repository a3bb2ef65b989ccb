"""Loading Markdown files as document revisions: the ``docs add`` command and pack seeding."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine

from activities.retrieval._markdown import parse_markdown
from activities.retrieval._model import GLOBAL_TENANT, PolicyDocument
from activities.retrieval._store import SqlRetriever
from activities.retrieval._tables import install

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
    revision: str = "v1",
    tenant_id: str = GLOBAL_TENANT,
    approved_by: str = "pack",
) -> list[PolicyDocument]:
    """Install the tables and load every ``*.md`` in ``directory`` (id = file stem), approved.

    Idempotent: an unchanged file is a no-op, so every worker may call it at start."""
    install(engine)
    retriever = SqlRetriever(engine)
    now = datetime.now(UTC)
    return [
        add_markdown(
            retriever,
            path,
            document_id=path.stem,
            revision=revision,
            tenant_id=tenant_id,
            effective_from=ALWAYS,
            now=now,
            approved_by=approved_by,
        )
        for path in sorted(directory.glob("*.md"))
    ]
