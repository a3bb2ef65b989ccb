"""Consequential support tools. Each honours the runtime's idempotency key in the system of
record, so a retry, a replay or a crashed worker returns the original receipt instead of paying
twice; ``reconcile`` answers "did it happen?" by reading the record, never by retrying blindly."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from activities.ports import ToolCall, ToolOutput
from domain.tools import ToolContract
from packs.support import records as r
from packs.support.tools import (
    CREATE_REFUND,
    SEND_CUSTOMER_MESSAGE,
    CustomerMessage,
    RefundRequest,
    _failed,
    order_view,
)


def _refund_output(row: Any) -> ToolOutput:
    output = {
        "refund_id": row.refund_id,
        "order_id": row.order_id,
        "amount": float(row.amount),
        "currency": row.currency,
    }
    return ToolOutput(status="succeeded", output=output, receipt_id=row.refund_id)


def _refund_by_key(conn: Connection, key: str) -> Any:
    return conn.execute(select(r.refunds).where(r.refunds.c.idempotency_key == key)).first()


@dataclass(frozen=True)
class CreateRefund:
    contract: ToolContract = CREATE_REFUND

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        args, key = call.arguments, call.idempotency_key
        assert isinstance(args, RefundRequest) and key is not None
        try:
            with engine.begin() as conn:
                existing = _refund_by_key(conn, key)
                if existing is not None:
                    return _refund_output(existing)
                problem = self._refusal(conn, call, args)
                if problem is not None:
                    return problem
                conn.execute(
                    insert(r.refunds).values(
                        refund_id="rf_" + key.removeprefix("idem_")[:16],
                        order_id=args.order_id,
                        amount=Decimal(str(args.amount)),
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

    def _refusal(self, conn: Connection, call: ToolCall, args: RefundRequest) -> ToolOutput | None:
        """The system of record re-checks what it owns: ownership, currency, amount left."""
        found = order_view(conn, args.order_id)
        if found is None or found[0].customer_id != call.principal.user_id:
            return _failed("order_not_found", f"no order {args.order_id} for this customer")
        _, view = found
        if view.currency != args.currency:
            return _failed("currency_mismatch", f"order is in {view.currency}")
        if Decimal(str(args.amount)) > Decimal(str(view.refundable_amount)):
            return _failed(
                "exceeds_refundable", f"{args.amount} exceeds refundable {view.refundable_amount}"
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
            with engine.begin() as conn:
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
