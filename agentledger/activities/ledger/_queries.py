"""Queries over the read models: the runs list, the approvals inbox, receipts per run.

A run's content in them (its request, answer, why it failed, approvals' arguments and reasons)
is stored sealed in a sealed ledger (``_readmodel_writes``) and opened here, one key lookup per
query; a sealed request is searched by its words' digests (``_search_terms``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Text, and_, cast, exists, func, or_, select

from agentledger.activities.ledger._base import LedgerBase
from agentledger.activities.ledger._codec import loads
from agentledger.activities.ledger._rows import ApprovalRow, ReceiptRow, RunRow
from agentledger.activities.ledger._subjects import SEALED
from agentledger.activities.ledger._tables import approvals, receipts, run_events, run_terms, runs

Row = TypeVar("Row", RunRow, ApprovalRow)
_RUN_CONTENT = ("request_text", "answer", "failure_reason")
_APPROVAL_CONTENT = ("arguments", "reason")


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What a runs listing may be narrowed by; ``None`` leaves a dimension open.

    ``tenant_id`` covers its sub-tenants (``acme`` lists ``acme/eu``'s runs too). ``after`` is
    the keyset cursor (``updated_at``, ``run_id``) of the last row of the previous page, so a
    page costs the same at any depth."""

    tenant_id: str | None = None
    status: str | None = None
    pack: str | None = None
    principal_id: str | None = None
    updated_from: datetime | None = None
    updated_to: datetime | None = None
    waiting_on_approval: bool | None = None
    after: tuple[datetime, str] | None = None
    text: str | None = None
    """Words the request must contain (case-insensitive; in a request stored in clear each
    anywhere in it, in a sealed one each a whole word: ``ORD_5101`` is ``ord`` and ``5101``)."""

    def words(self) -> list[str]:
        return (self.text or "").split()[:8]


Digests = Mapping[str, list[str] | None]
"""Per word of ``RunFilter.text``, its digests as ``run_terms`` holds them (``None``: there is
no search key, so no sealed request has any)."""


def _run_conditions(f: RunFilter, digests: Digests | None = None) -> list[ColumnElement[bool]]:
    c = runs.c
    found: list[ColumnElement[bool]] = []
    if f.tenant_id is not None:
        found.append(
            or_(
                c.tenant_id == f.tenant_id,
                c.tenant_id.startswith(f.tenant_id + "/", autoescape=True),
            )
        )
    for column, value in ((c.status, f.status), (c.pack, f.pack), (c.principal_id, f.principal_id)):
        if value is not None:
            found.append(column == value)
    if f.updated_from is not None:
        found.append(c.updated_at >= f.updated_from)
    if f.updated_to is not None:
        found.append(c.updated_at < f.updated_to)
    if f.waiting_on_approval is not None:
        pending = exists().where(approvals.c.run_id == c.run_id, approvals.c.status == "pending")
        found.append(pending if f.waiting_on_approval else ~pending)
    for word in f.words():
        found.append(_contains(word, (digests or {}).get(word)))
    if f.after is not None:
        at, run_id = f.after
        found.append(or_(c.updated_at < at, and_(c.updated_at == at, c.run_id > run_id)))
    return found


def _contains(word: str, terms: list[str] | None) -> ColumnElement[bool]:
    """The request holds ``word``: searched as text where it is stored in clear, by its words'
    digests where it is sealed."""
    c = runs.c
    clear = and_(
        ~c.request_text.startswith(SEALED), c.request_text.icontains(word, autoescape=True)
    )
    if not terms:
        return clear
    held = [
        exists().where(run_terms.c.run_id == c.run_id, run_terms.c.term == term) for term in terms
    ]
    return or_(clear, and_(c.request_text.startswith(SEALED), *held))


class ReadModelQueries(LedgerBase):
    def get_run(self, run_id: str) -> RunRow | None:
        with self._reading() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).first()
            return None if row is None else self._opened(conn, [RunRow.of(row)])[0]

    def list_runs(
        self, limit: int = 50, *, status: str | None = None, tenant_id: str | None = None
    ) -> list[RunRow]:
        """Most recently updated first."""
        query = select(runs).order_by(runs.c.updated_at.desc(), runs.c.run_id).limit(limit)
        if status is not None:
            query = query.where(runs.c.status == status)
        if tenant_id is not None:
            query = query.where(runs.c.tenant_id == tenant_id)
        with self._reading() as conn:
            return self._opened(conn, [RunRow.of(row) for row in conn.execute(query)])

    def search_runs(self, where: RunFilter, limit: int = 50) -> list[RunRow]:
        """One page of runs matching ``where``, most recently updated first."""
        with self._reading() as conn:
            digests = self._digests(conn, where.words())
            query = select(runs).where(*_run_conditions(where, digests))
            query = query.order_by(runs.c.updated_at.desc(), runs.c.run_id).limit(limit)
            return self._opened(conn, [RunRow.of(row) for row in conn.execute(query)])

    def _digests(self, conn: Connection, words: list[str]) -> Digests:
        if self.sealer is None:
            return {}
        return {word: self.sealer.search.of(conn, word, make=False) for word in words}

    def approvals(
        self,
        status: str | None = "pending",
        run_id: str | None = None,
        *,
        tenant_id: str | None = None,
    ) -> list[ApprovalRow]:
        """The inbox by default (pending, oldest first); ``status=None`` for every approval.

        ``tenant_id`` keeps the approvals of that tenant's runs (and its sub-tenants')."""
        query = select(approvals).order_by(
            approvals.c.updated_at, approvals.c.run_id, approvals.c.approval_id
        )
        if status is not None:
            query = query.where(approvals.c.status == status)
        if run_id is not None:
            query = query.where(approvals.c.run_id == run_id)
        if tenant_id is not None:
            owned = select(runs.c.run_id).where(*_run_conditions(RunFilter(tenant_id=tenant_id)))
            query = query.where(approvals.c.run_id.in_(owned))
        with self._reading() as conn:
            return self._opened(conn, [ApprovalRow.of(row) for row in conn.execute(query)])

    def receipts(self, run_id: str) -> list[ReceiptRow]:
        query = select(receipts).where(receipts.c.run_id == run_id).order_by(receipts.c.seq)
        with self._reading() as conn:
            return [ReceiptRow.of(row) for row in conn.execute(query)]

    def pending_approvals(self) -> dict[str, tuple[int, datetime]]:
        """Per tool: how many approvals are pending, and the soonest of their expiries."""
        query = (
            select(approvals.c.tool, func.count(), func.min(approvals.c.expires_at))
            .where(approvals.c.status == "pending")
            .group_by(approvals.c.tool)
        )
        with self._reading() as conn:
            return {tool: (count, soonest) for tool, count, soonest in conn.execute(query)}

    def approval_requested_at(self, run_id: str, approval_id: str) -> datetime | None:
        """When the run's ``approval_id`` was requested (its ``ApprovalRequested`` event)."""
        query = select(run_events.c.recorded_at, cast(run_events.c.payload, Text)).where(
            run_events.c.run_id == run_id, run_events.c.kind == "approval_requested"
        )
        with self._reading() as conn:
            found = list(conn.execute(query))
            payloads = self.open_stored(conn, [payload for _, payload in found])
        for (recorded_at, _), payload in zip(found, payloads, strict=True):
            if loads(payload).get("approval_id") == approval_id:
                return recorded_at  # type: ignore[no-any-return]
        return None

    def _opened(self, conn: Connection, rows: list[Row]) -> list[Row]:
        """The rows with their sealed content opened (``ContentErased`` without the ring)."""
        fields = _RUN_CONTENT if rows and isinstance(rows[0], RunRow) else _APPROVAL_CONTENT
        found = [
            (i, name, value)
            for i, row in enumerate(rows)
            for name in fields
            if isinstance(value := getattr(row, name), str) and value.startswith(SEALED)
        ]
        if not found:
            return rows
        opened = list(rows)
        texts = self.open_stored(conn, [value for _, _, value in found])
        for (i, name, _), text in zip(found, texts, strict=True):
            clear: Any = loads(text) if name == "arguments" else text
            opened[i] = replace(opened[i], **{name: clear})
        return opened
