"""Consequential support tools. Each honours the runtime's idempotency key in the system of
record, so a retry, a replay or a crashed worker returns the original receipt instead of paying
twice; ``reconcile`` answers "did it happen?" by reading the record, never by retrying blindly.

A key cannot stop two *runs* (two keys) from refunding one order at the same moment, so a refund
serialises on the order itself: its transaction (``ctx.write_engine()``) locks the order row
before it reads what it checks, and the read-check-insert is then one step per order.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from agentledger.packs.support import records as r
from agentledger.packs.support.contracts import (
    REFUND_APPROVAL,
    CustomerMessage,
    MessageReceipt,
    RefundReceipt,
    RefundRequest,
)
from agentledger.packs.support.definition import pack
from agentledger.packs.support.money import exact_amount
from agentledger.packs.support.tools import owned, refundable_amount
from agentledger.sdk import FactBound, ToolContext, ToolFailure, ToolResult


def _id(prefix: str, key: str) -> str:
    return prefix + key.removeprefix("idem_")[:16]


def _refund_receipt(row: Any) -> ToolResult[RefundReceipt]:
    receipt = RefundReceipt(
        refund_id=row.refund_id,
        order_id=row.order_id,
        amount=float(Decimal(str(row.amount))),
        currency=row.currency,
    )
    return ToolResult(receipt, receipt_id=row.refund_id)


def _lock_order(conn: Connection, order_id: str) -> Any:
    """The order row, locked until commit: concurrent refunds of it queue here."""
    return conn.execute(
        select(r.orders).where(r.orders.c.order_id == order_id).with_for_update()
    ).first()


def _refund_by_key(conn: Connection, key: str) -> Any:
    return conn.execute(select(r.refunds).where(r.refunds.c.idempotency_key == key)).first()


def _refusal(
    ctx: ToolContext, conn: Connection, args: RefundRequest, order: Any
) -> ToolFailure | None:
    """The system of record re-checks what it owns: ownership, currency, amount left."""
    if not owned(order, ctx.principal):
        return ToolFailure("order_not_found", f"no order {args.order_id} for this customer")
    if order.currency != args.currency:
        return ToolFailure("currency_mismatch", f"order is in {order.currency}")
    amount, left = exact_amount(args.amount, args.currency), refundable_amount(conn, order)
    if amount > left:
        shown = max(left, Decimal(0)).quantize(amount)
        return ToolFailure(
            "exceeds_refundable",
            f"{amount} {args.currency} exceeds refundable {shown} {args.currency} "
            f"left on {args.order_id}",
        )
    return None


def find_refund(ctx: ToolContext) -> ToolResult[RefundReceipt] | None:
    """The refund stored under this call's key, if it ran."""
    with ctx.engine.connect() as conn:
        row = _refund_by_key(conn, ctx.key)
    return _refund_receipt(row) if row is not None else None


@pack.write_tool(
    description="Refund an order to the original payment method. Requires approval.",
    required_scope="refunds:request",
    reconcile=find_refund,
    arguments=RefundRequest,
    resource_argument="order_id",
    approval=REFUND_APPROVAL,
    fact_bounds=(
        FactBound(argument="amount", fact="refundable_amount", relation="at_most"),
        FactBound(argument="currency", fact="currency", relation="equals"),
    ),
    user_view="Refund {refund_id}: {amount} {currency} for {order_id}",
)
def create_refund(ctx: ToolContext, args: RefundRequest) -> ToolResult[RefundReceipt] | ToolFailure:
    try:
        with ctx.write_engine().begin() as conn:
            order = _lock_order(conn, args.order_id)
            existing = _refund_by_key(conn, ctx.key)
            if existing is not None:
                return _refund_receipt(existing)
            problem = _refusal(ctx, conn, args, order)
            if problem is not None:
                return problem
            conn.execute(
                insert(r.refunds).values(
                    refund_id=_id("rf_", ctx.key),
                    order_id=args.order_id,
                    amount=exact_amount(args.amount, args.currency),
                    currency=args.currency,
                    reason=args.reason,
                    idempotency_key=ctx.key,
                    requested_by=ctx.principal.user_id,
                    created_at=ctx.now,
                )
            )
    except IntegrityError:
        pass  # a concurrent attempt with the same key won; its row is the receipt
    return find_refund(ctx) or ToolFailure("refund_lost", "refund not stored")


def _message_by_key(conn: Connection, key: str) -> Any:
    return conn.execute(select(r.messages).where(r.messages.c.idempotency_key == key)).first()


def find_message(ctx: ToolContext) -> ToolResult[MessageReceipt] | None:
    """The message stored under this call's key, if it was sent."""
    with ctx.engine.connect() as conn:
        row = _message_by_key(conn, ctx.key)
    if row is None:
        return None
    return ToolResult(MessageReceipt(message_id=row.message_id), receipt_id=row.message_id)


@pack.write_tool(
    description="Send the customer a message.",
    required_scope="messages:send",
    reconcile=find_message,
    arguments=CustomerMessage,
    resource_argument="customer_id",
    user_view="Message {message_id} sent",
)
def send_customer_message(
    ctx: ToolContext, args: CustomerMessage
) -> ToolResult[MessageReceipt] | ToolFailure:
    if args.customer_id != ctx.principal.user_id:
        return ToolFailure("customer_not_found", f"no customer {args.customer_id} for this run")
    try:
        with ctx.write_engine().begin() as conn:
            if _message_by_key(conn, ctx.key) is None:
                conn.execute(
                    insert(r.messages).values(
                        message_id=_id("msg_", ctx.key),
                        customer_id=args.customer_id,
                        body=args.body,
                        idempotency_key=ctx.key,
                        created_at=ctx.now,
                    )
                )
    except IntegrityError:
        pass  # a concurrent attempt with the same key won
    return find_message(ctx) or ToolFailure("message_lost", "message not stored")
