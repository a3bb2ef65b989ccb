"""Read-model rows as returned to callers: plain frozen values, detached from the database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row

RunStatus = Literal["running", "completed", "failed", "cancelled", "awaiting_approval"]
ApprovalStatus = Literal["pending", "granted", "rejected", "expired"]


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    status: RunStatus
    pack: str
    principal_id: str
    tenant_id: str
    request_text: str
    answer: str | None
    cited_source_ids: tuple[str, ...]
    failure_reason: str | None
    created_at: datetime
    updated_at: datetime
    last_seq: int
    manifest_hash: str

    @classmethod
    def of(cls, row: Row[Any]) -> RunRow:
        m = row._mapping
        return cls(**{**m, "cited_source_ids": tuple(m["cited_source_ids"] or ())})


@dataclass(frozen=True, slots=True)
class ApprovalRow:
    """Identified by ``(run_id, approval_id)``: approval ids are unique within their run."""

    run_id: str
    approval_id: str
    status: ApprovalStatus
    operation_id: str
    tool: str
    arguments: dict[str, Any]
    proposal_digest: str
    requested_by: str
    approver_role: str
    expires_at: datetime
    decided_by: str | None
    reason: str | None
    updated_at: datetime

    @classmethod
    def of(cls, row: Row[Any]) -> ApprovalRow:
        return cls(**row._mapping)


@dataclass(frozen=True, slots=True)
class ReceiptRow:
    run_id: str
    operation_id: str
    tool: str
    status: str
    idempotency_key: str | None
    receipt_id: str | None
    seq: int

    @classmethod
    def of(cls, row: Row[Any]) -> ReceiptRow:
        return cls(**row._mapping)
