"""Consequential support tools. Each honours the runtime's idempotency key in the system of
record, so a retry, a replay or a crashed worker returns the original receipt instead of paying
twice; ``reconcile`` answers "did it happen?" by reading the record, never by retrying blindly.

A key cannot stop two *runs* (two keys) from refunding one order at the same moment, so a refund
serialises on the order itself: its transaction locks the order row (``SELECT ... FOR UPDATE`` on
PostgreSQL, under READ COMMITTED so each statement after the lock sees the other run's committed
refund) and on SQLite begins ``IMMEDIATE`` (the ledger engine's ``ledger_write`` option), taking
the write lock before the first read and waiting on the busy timeout instead of failing when a
read lock would have to upgrade. The read-check-insert is then one step per order.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.domain.tools import ToolContract
from agentledger.packs.support import records as r
from agentledger.packs.support.contracts import (
    CREATE_REFUND,
    SEND_CUSTOMER_MESSAGE,
    CustomerMessage,
    RefundReceipt,
    RefundRequest,
)
from agentledger.packs.support.money import exact_amount
from agentledger.packs.support.tools import _failed, refundable_amount

_WRITE: Final = {"ledger_write": True}  # SQLite: BEGIN IMMEDIATE, see activities/ledger/_engine.py


def _writer(engine: Engine) -> Engine:
    """The engine for a write transaction that reads what it checks (see the module docstring)."""
    if engine.dialect.name == "postgresql":
        return engine.execution_options(**_WRITE, isolation_level="READ COMMITTED")
    return engine.execution_options(**_WRITE)


def _refund_output(row: Any) -> ToolOutput:
    receipt = RefundReceipt(
        refund_id=row.refund_id,
        order_id=row.order_id,
        amount=float(Decimal(str(row.amount))),
        currency=row.currency,
    )
    return ToolOutput(status="succeeded", output=receipt.model_dump(), receipt_id=row.refund_id)


def _lock_order(conn: Connection, order_id: str) -> Any:
    """The order row, locked until commit: concurrent refunds of it queue here."""
    return conn.execute(
        select(r.orders).where(r.orders.c.order_id == order_id).with_for_update()
    ).first()


def _refund_by_key(conn: Connection, key: str) -> Any:
    return conn.execute(select(r.refunds).where(r.refunds.c.idempotency_key == key)).first()


@dataclass(frozen=True)
class CreateRefund:
    contract: ToolContract = CREATE_REFUND

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        args, key = call.arguments, call.idempotency_key
        assert isinstance(args, RefundRequest) and key is not None
        try:
            with _writer(engine).begin() as conn:
                order = _lock_order(conn, args.order_id)
                existing = _refund_by_key(conn, key)
                if existing is not None:
                    return _refund_output(existing)
                problem = self._refusal(conn, call, args, order)
                if problem is not None:
                    return problem
                conn.execute(
                    insert(r.refunds).values(
                        refund_id="rf_" + key.removeprefix("idem_")[:16],
                        order_id=args.order_id,
                        amount=exact_amount(args.amount, args.currency),
                        currency=args.currency,
                        reason=args.reason,
                        idempotency_key=key,
                        requested_by=call.principal.user_id,
                        created_at=call.now,
                    )
                )
        except IntegrityError:
            pass  # a concurrent attempt with the same key won; its row is the receipt
        with engine.connect() as conn:
            return _refund_output(_refund_by_key(conn, key))

    def _refusal(
        self, conn: Connection, call: ToolCall, args: RefundRequest, order: Any
    ) -> ToolOutput | None:
        """The system of record re-checks what it owns: ownership, currency, amount left."""
        if (
            order is None
            or order.customer_id != call.principal.user_id
            or order.tenant_id != call.principal.tenant_id
        ):
            return _failed("order_not_found", f"no order {args.order_id} for this customer")
        if order.currency != args.currency:
            return _failed("currency_mismatch", f"order is in {order.currency}")
        amount, left = exact_amount(args.amount, args.currency), refundable_amount(conn, order)
        if amount > left:
            shown = max(left, Decimal(0)).quantize(amount)
            return _failed(
                "exceeds_refundable",
                f"{amount} {args.currency} exceeds refundable {shown} {args.currency} "
                f"left on {args.order_id}",
            )
        return None

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        assert call.idempotency_key is not None
        with engine.connect() as conn:
            row = _refund_by_key(conn, call.idempotency_key)
        return _refund_output(row) if row is not None else None


def _message_by_key(conn: Connection, key: str) -> Any:
    return conn.execute(select(r.messages).where(r.messages.c.idempotency_key == key)).first()


@dataclass(frozen=True)
class SendCustomerMessage:
    contract: ToolContract = SEND_CUSTOMER_MESSAGE

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        args, key = call.arguments, call.idempotency_key
        assert isinstance(args, CustomerMessage) and key is not None
        if args.customer_id != call.principal.user_id:
            return _failed("customer_not_found", f"no customer {args.customer_id} for this run")
        try:
            with _writer(engine).begin() as conn:
                if _message_by_key(conn, key) is None:
                    conn.execute(
                        insert(r.messages).values(
                            message_id="msg_" + key.removeprefix("idem_")[:16],
                            customer_id=args.customer_id,
                            body=args.body,
                            idempotency_key=key,
                            created_at=call.now,
                        )
                    )
        except IntegrityError:
            pass  # a concurrent attempt with the same key won
        return self.reconcile(engine, call) or _failed("message_lost", "message not stored")

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        assert call.idempotency_key is not None
        with engine.connect() as conn:
            row = _message_by_key(conn, call.idempotency_key)
        if row is None:
            return None
        return ToolOutput(
            status="succeeded", output={"message_id": row.message_id}, receipt_id=row.message_id
        )
