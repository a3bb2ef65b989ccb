"""Queries over the read models: the runs list, the approvals inbox, receipts per run."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Text, cast, func, select

from agentledger.activities.ledger._base import LedgerBase
from agentledger.activities.ledger._codec import loads
from agentledger.activities.ledger._rows import ApprovalRow, ReceiptRow, RunRow
from agentledger.activities.ledger._tables import approvals, receipts, run_events, runs


class ReadModelQueries(LedgerBase):
    def get_run(self, run_id: str) -> RunRow | None:
        with self._reading() as conn:
            row = conn.execute(select(runs).where(runs.c.run_id == run_id)).first()
        return None if row is None else RunRow.of(row)

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
            return [RunRow.of(row) for row in conn.execute(query)]

    def approvals(
        self, status: str | None = "pending", run_id: str | None = None
    ) -> list[ApprovalRow]:
        """The inbox by default (pending, oldest first); ``status=None`` for every approval."""
        query = select(approvals).order_by(
            approvals.c.updated_at, approvals.c.run_id, approvals.c.approval_id
        )
        if status is not None:
            query = query.where(approvals.c.status == status)
        if run_id is not None:
            query = query.where(approvals.c.run_id == run_id)
        with self._reading() as conn:
            return [ApprovalRow.of(row) for row in conn.execute(query)]

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
            for recorded_at, payload in conn.execute(query):
                if loads(payload).get("approval_id") == approval_id:
                    return recorded_at  # type: ignore[no-any-return]
        return None
