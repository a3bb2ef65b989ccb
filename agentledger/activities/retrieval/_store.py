"""``SqlRetriever``: versioned policy documents on SQLite or PostgreSQL behind one port.

Revisions are immutable once stored. Approving or withdrawing a revision recomputes, in one
transaction, which revision of the document is effective when: each approved revision is
effective from its ``effective_from`` until the next approved revision starts (or its own
``effective_to``). So a newer approved revision supersedes the old one in search results, while
the old one stays readable by id for audit.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from agentledger.activities._sql import SqlStore
from agentledger.activities._terms import aware, utc
from agentledger.activities.retrieval import _search
from agentledger.activities.retrieval._embedder import shared_embedder
from agentledger.activities.retrieval._fusion import fuse
from agentledger.activities.retrieval._markdown import ParsedDocument
from agentledger.activities.retrieval._model import (
    GLOBAL_TENANT,
    ApprovalState,
    DocumentConflict,
    DocumentNotFound,
    PassageHit,
    PolicyDocument,
    RetrievalMode,
)
from agentledger.activities.retrieval._modes import active_mode
from agentledger.activities.retrieval._rows import passage_rows
from agentledger.activities.retrieval._signatures import keep_signature, signature_of
from agentledger.activities.retrieval._tables import bump_generation, documents, passages


def _natural(revision: str) -> tuple[tuple[int, int, str], ...]:
    """ "v10" after "v9", "2026-08" after "2026-07"."""
    parts = re.findall(r"\d+|\D+", revision)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


FUSION_DEPTH = 20
"""How deep each retriever's ranking goes into a fusion: a passage one retriever ranks 15th can
still win when the other ranks it first."""


class SqlRetriever(SqlStore):
    """The ``Retriever`` port plus the document operations behind ``agentledger docs``."""

    # ---------------------------------------------------------------- the port
    def search(
        self,
        query: str,
        *,
        tenant_id: str,
        now: datetime,
        limit: int = 3,
        mode: RetrievalMode | None = None,
    ) -> list[PassageHit]:
        """Full-text, semantic or both fused (``mode``; ``None``: the process's configured
        retriever). Every hit says which retriever ranked it where (``retrieved_by``)."""
        mode = mode or active_mode()
        filters = _search.Filters(tenant_id, now)
        if mode == "fulltext":
            with self._engine.connect() as conn:
                return _search.search(conn, query, limit, filters)
        from agentledger.activities.retrieval import _semantic  # numpy: the extra only

        embedder = shared_embedder()
        if mode == "semantic":
            return _semantic.search(self._engine, embedder, query, limit, filters)
        depth = max(limit, FUSION_DEPTH)
        with self._engine.connect() as conn:
            lexical = _search.search(conn, query, depth, filters, most_terms=True)
        semantic = _semantic.search(self._engine, embedder, query, depth, filters)
        return fuse([lexical, semantic], limit)

    def search_unfiltered(self, query: str, *, limit: int = 3) -> list[PassageHit]:
        """Every tenant and revision on the same index: audit and benchmarks only."""
        with self._engine.connect() as conn:
            return _search.search(conn, query, limit, None)

    def passage(self, source_id: str, revision: str, *, tenant_id: str) -> PassageHit | None:
        p = passages.c
        with self._engine.connect() as conn:
            row = (
                conn.execute(
                    select(p.source_id, p.document_id, p.revision, p.anchor, p.title, p.text)
                    .add_columns(p.content_hash, p.tenant_id)
                    .where(p.source_id == source_id, p.revision == revision)
                    .where(p.tenant_id.in_([tenant_id, GLOBAL_TENANT]))
                )
                .mappings()
                .first()
            )
        return PassageHit(**row) if row is not None else None

    # ------------------------------------------------------------ documents
    def add_document(
        self,
        parsed: ParsedDocument,
        *,
        tenant_id: str,
        document_id: str,
        revision: str,
        effective_from: datetime,
        now: datetime,
        effective_to: datetime | None = None,
    ) -> bool:
        """Store a draft revision; ``False`` if this exact revision is already stored."""
        try:
            return self._add(
                parsed, tenant_id, document_id, revision, effective_from, now, effective_to
            )
        except IntegrityError:
            # Another worker stored the same revision first: same content is a no-op.
            with self._engine.connect() as conn:
                existing = self._document(conn, tenant_id, document_id, revision)
            if existing is None or existing.content_hash != parsed.content_hash:
                raise
            return False

    def _add(
        self,
        parsed: ParsedDocument,
        tenant_id: str,
        document_id: str,
        revision: str,
        effective_from: datetime,
        now: datetime,
        effective_to: datetime | None,
    ) -> bool:
        with self._writer.begin() as conn:
            existing = self._document(conn, tenant_id, document_id, revision)
            if existing is not None:
                if existing.content_hash != parsed.content_hash:
                    raise DocumentConflict(
                        f"{document_id}@{revision} is already stored with other content; "
                        "load the change as a new revision"
                    )
                return False
            conn.execute(
                insert(documents).values(
                    tenant_id=tenant_id,
                    document_id=document_id,
                    revision=revision,
                    title=parsed.title or document_id,
                    effective_from=utc(effective_from),
                    effective_to=utc(effective_to) if effective_to else None,
                    approval_state="draft",
                    content_hash=parsed.content_hash,
                    loaded_at=utc(now),
                )
            )
            ids = [
                _inserted_id(conn.execute(insert(passages).values(**row)).inserted_primary_key)
                for row in passage_rows(tenant_id, document_id, revision, effective_from, parsed)
            ]
            _search.index(conn, ids)
            bump_generation(conn)
        self._embed(ids)
        return True

    def _embed(self, ids: list[int]) -> None:
        """A new revision's passages are new rows: embed them now, not at a customer's query."""
        if active_mode() != "fulltext":
            from agentledger.activities.retrieval import _semantic

            _semantic.ensure_embedded(self._engine, shared_embedder(), ids)

    def approve(
        self,
        tenant_id: str,
        document_id: str,
        revision: str,
        *,
        approved_by: str,
        assertion: str | None = None,
    ) -> PolicyDocument:
        """``assertion``: the issuer's signed record of the decision, kept with the revision."""
        key = (tenant_id, document_id, revision)
        return self._set_state(*key, "approved", approved_by, assertion)

    def approval_assertion(self, tenant_id: str, document_id: str, revision: str) -> str | None:
        with self._engine.connect() as conn:
            return signature_of(conn, tenant_id, document_id, revision)

    def withdraw(self, tenant_id: str, document_id: str, revision: str) -> PolicyDocument:
        return self._set_state(tenant_id, document_id, revision, "withdrawn", None)

    def revisions(self, tenant_id: str, document_id: str) -> list[PolicyDocument]:
        with self._engine.connect() as conn:
            return self._revisions(conn, tenant_id, document_id)

    def current_revisions(self, tenant_id: str, now: datetime) -> dict[str, str]:
        """Document id → the revision effective at ``now``: what a run's policy version pins."""
        p = passages.c
        at = utc(now)
        with self._engine.connect() as conn:
            rows = conn.execute(
                select(p.document_id, p.revision)
                .distinct()
                .where(p.tenant_id.in_([tenant_id, GLOBAL_TENANT]), p.approved)
                .where(p.effective_from <= at)
                .where((p.effective_until.is_(None)) | (p.effective_until > at))
            ).all()
        return dict(sorted((str(d), str(r)) for d, r in rows))

    # -------------------------------------------------------------- helpers
    def _set_state(
        self,
        tenant_id: str,
        document_id: str,
        revision: str,
        state: ApprovalState,
        by: str | None,
        assertion: str | None = None,
    ) -> PolicyDocument:
        key = (tenant_id, document_id, revision)
        with self._writer.begin() as conn:
            if self._document(conn, *key) is None:
                raise DocumentNotFound(f"no document {document_id}@{revision} for {tenant_id}")
            conn.execute(
                update(documents)
                .where(*_doc_key(*key))
                .values(approval_state=state, approved_by=by)
            )
            keep_signature(conn, key, assertion)
            self._recompute(conn, tenant_id, document_id)
            bump_generation(conn)
            found = self._document(conn, *key)
        assert found is not None
        return found

    def _recompute(self, conn: Connection, tenant_id: str, document_id: str) -> None:
        """Each approved revision runs until the next one starts: one effective at a time."""
        revisions = self._revisions(conn, tenant_id, document_id)
        chain = sorted((d for d in revisions if d.approval_state == "approved"), key=_order)
        successor = {a.revision: b for a, b in itertools.pairwise(chain)}
        for doc in revisions:
            nxt = successor.get(doc.revision)
            ends = [t for t in (doc.effective_to, nxt.effective_from if nxt else None) if t]
            conn.execute(
                update(documents)
                .where(*_doc_key(tenant_id, document_id, doc.revision))
                .values(superseded_by=nxt.revision if nxt else None)
            )
            conn.execute(
                update(passages)
                .where(passages.c.tenant_id == tenant_id, passages.c.document_id == document_id)
                .where(passages.c.revision == doc.revision)
                .values(
                    approved=doc.approval_state == "approved",
                    effective_until=utc(min(ends)) if ends else None,
                )
            )

    def _revisions(
        self, conn: Connection, tenant_id: str, document_id: str
    ) -> list[PolicyDocument]:
        d = documents.c
        rows = conn.execute(
            select(documents).where(d.tenant_id == tenant_id, d.document_id == document_id)
        ).mappings()
        return sorted((_document(r) for r in rows), key=lambda x: _natural(x.revision))

    def _document(
        self, conn: Connection, tenant_id: str, document_id: str, revision: str
    ) -> PolicyDocument | None:
        row = conn.execute(select(documents).where(*_doc_key(tenant_id, document_id, revision)))
        found = row.mappings().first()
        return _document(found) if found is not None else None


def _inserted_id(key: Any) -> int:
    assert key is not None
    return int(key[0])


def _order(doc: PolicyDocument) -> tuple[Any, ...]:
    return (doc.effective_from, _natural(doc.revision))


def _doc_key(tenant_id: str, document_id: str, revision: str) -> tuple[Any, ...]:
    d = documents.c
    return (d.tenant_id == tenant_id, d.document_id == document_id, d.revision == revision)


def _document(row: Any) -> PolicyDocument:
    fields = {k: row[k] for k in PolicyDocument.model_fields}
    fields["effective_from"] = aware(row["effective_from"])
    fields["effective_to"] = aware(row["effective_to"])
    return PolicyDocument(**fields)
