"""Denials the API itself makes, recorded in the ledger's database (``api_denials``).

A refused approval is recorded by the run itself (``approval_attempt_refused``, in the run's own
log). Everything else the API refuses (a read of another tenant's run, a policy approval without
the role, a forged form) belongs to no run, so no run event fits: it lands in this append-only
table, with who asked (verified subject, issuer, token id), what, and the typed reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import (
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    select,
)

from agentledger.api.auth import Caller

_metadata = MetaData()

api_denials = Table(
    "api_denials",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", String(), nullable=False),
    Column("subject", String(), nullable=False),
    Column("issuer", String(), nullable=False),
    Column("token_id", String()),
    Column("tenant_id", String(), nullable=False),
    Column("action", String(), nullable=False),
    Column("target", String(), nullable=False),
    Column("reason_code", String(), nullable=False),
    Column("detail", Text, nullable=False),
)


@dataclass(frozen=True)
class Denial:
    at: str
    subject: str
    tenant_id: str
    action: str
    target: str
    reason_code: str
    detail: str


class DenialLog:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        _metadata.create_all(engine, checkfirst=True)

    def record(
        self, caller: Caller, action: str, target: str, reason_code: str, detail: str
    ) -> None:
        row = {
            "at": datetime.now(UTC).isoformat(),
            "subject": caller.subject,
            "issuer": caller.issuer,
            "token_id": caller.token_id,
            "tenant_id": caller.principal.tenant_id,
            "action": action,
            "target": target,
            "reason_code": reason_code,
            "detail": detail,
        }
        with self._engine.begin() as conn:
            conn.execute(insert(api_denials), row)

    def recent(self, tenant_id: str | None = None, limit: int = 100) -> list[Denial]:
        query = select(api_denials).order_by(api_denials.c.id.desc()).limit(limit)
        if tenant_id is not None:
            query = query.where(api_denials.c.tenant_id == tenant_id)
        with self._engine.connect() as conn:
            return [
                Denial(**{k: v for k, v in row._mapping.items() if k in Denial.__annotations__})
                for row in conn.execute(query)
            ]
