"""What a tool function receives (``ToolContext``) and may return (``ToolResult``, ``ToolFailure``
or just its output model)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Final, Generic, TypeVar

from pydantic import BaseModel, JsonValue
from sqlalchemy.engine import Engine

from agentledger.domain.principal import Principal
from agentledger.domain.tools import EvidencePassage, ResourceRef, VerifiedFact

OutputT = TypeVar("OutputT", bound=BaseModel)

_LEDGER_WRITE: Final = {"ledger_write": True}  # the ledger engine's SQLite BEGIN IMMEDIATE

FactValue = JsonValue | Decimal
"""A fact's value as a tool states it; a Decimal is recorded as a JSON number, because fact
bounds and approval thresholds compare numbers."""


class MissingIdempotencyKey(RuntimeError):
    """A write ran without the runtime's key (the SDK refuses such a call before the tool runs,
    so this means the tool read ``ctx.key`` outside a write)."""


@dataclass(frozen=True)
class ToolContext:
    """One call of a tool: the system of record, who is acting, and the runtime's ids.

    ``operation_id`` is stable across retries of this call; ``idempotency_key`` is issued by the
    runtime for every write (``None`` for reads) and is what the system of record must key on;
    ``now`` is the call's time as the run recorded it (never read the clock in a tool).
    """

    engine: Engine
    principal: Principal
    operation_id: str
    idempotency_key: str | None
    now: datetime
    tool: str

    @property
    def key(self) -> str:
        """The idempotency key of a write (always set when a write tool runs)."""
        if self.idempotency_key is None:
            raise MissingIdempotencyKey(f"{self.tool}: no idempotency key (is it a write tool?)")
        return self.idempotency_key

    def write_engine(self) -> Engine:
        """The engine for a write transaction that reads what it checks before it writes.

        A key cannot stop two runs (two keys) changing one record at once, so such a write
        locks the record it checks (``SELECT ... FOR UPDATE``). On PostgreSQL this engine runs
        under READ COMMITTED, so each statement after the lock sees the other run's committed
        write; on SQLite it begins ``IMMEDIATE`` (the ledger engine's ``ledger_write`` option),
        taking the write lock before the first read and waiting on the busy timeout instead of
        failing when a read lock would have to upgrade."""
        if self.engine.dialect.name == "postgresql":
            return self.engine.execution_options(**_LEDGER_WRITE, isolation_level="READ COMMITTED")
        return self.engine.execution_options(**_LEDGER_WRITE)

    def facts(self, resource_id: str, **values: FactValue) -> tuple[VerifiedFact, ...]:
        """Verified facts about ``resource_id`` observed now (``fact_bounds`` check against
        these; the run's state keys them ``"<resource_id>.<name>"``)."""
        return tuple(
            VerifiedFact(
                name=name,
                value=float(value) if isinstance(value, Decimal) else value,
                resource_id=resource_id,
                observed_at=self.now,
            )
            for name, value in values.items()
        )

    def resource(
        self, resource_id: str, kind: str, *, owner_user_id: str, tenant_id: str
    ) -> ResourceRef:
        """A resource as the system of record says it is owned (writes may only target
        resources a read verified as the acting principal's)."""
        return ResourceRef(
            resource_id=resource_id, kind=kind, owner_user_id=owner_user_id, tenant_id=tenant_id
        )


@dataclass(frozen=True)
class ToolResult(Generic[OutputT]):
    """A succeeded call with what it verified. Returning the output model alone is the same as
    ``ToolResult(output)``: no receipt id, facts or resources."""

    output: OutputT
    receipt_id: str | None = None
    facts: Sequence[VerifiedFact] = ()
    resources: Sequence[ResourceRef] = ()
    evidence: Sequence[EvidencePassage] = ()


@dataclass(frozen=True)
class ToolFailure:
    """An expected failure (not found, refused by the system of record): recorded as a failed
    receipt with this code and message, shown to the model, never retried."""

    code: str
    message: str
