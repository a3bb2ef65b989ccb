"""The support pack's reads: an order, a customer, the returns policy. Each verifies what it
read against the acting principal (another customer's record reads exactly like a missing one)
and states the facts and resources later writes are checked against."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pydantic import JsonValue
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from agentledger.activities.retrieval import search_passages
from agentledger.packs.support import records as r
from agentledger.packs.support.contracts import (
    CustomerRef,
    CustomerView,
    OrderRef,
    OrderView,
    PolicyQuery,
    PolicyResults,
)
from agentledger.packs.support.definition import pack
from agentledger.sdk import ModelView, Principal, ToolContext, ToolFailure, ToolResult


def owned(row: Any, principal: Principal, owner_column: str = "customer_id") -> bool:
    """The record exists and belongs to the acting principal (tenant included)."""
    return (
        row is not None
        and getattr(row, owner_column) == principal.user_id
        and row.tenant_id == principal.tenant_id
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _as_utc(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _refunded(conn: Connection, order_id: str) -> Decimal:
    total = conn.execute(
        select(func.coalesce(func.sum(r.refunds.c.amount), 0)).where(
            r.refunds.c.order_id == order_id
        )
    ).scalar_one()
    return Decimal(str(total))


def refundable_amount(conn: Connection, order: Any) -> Decimal:
    """What is left to refund on ``order`` (a row), exactly; may be negative on corrupt data."""
    return Decimal(str(order.amount)) - _refunded(conn, order.order_id)


def _status(row: Any, refundable: Decimal) -> str:
    promised, delivered = _as_utc(row.promised_by), _as_utc(row.delivered_at)
    status: str = row.status
    late = delivered is not None and promised is not None and delivered > promised
    if status == "delivered" and late:
        status = "delivered_late"
    if refundable <= 0 and status != "in_transit":
        status = "refunded"
    return status


def order_view(conn: Connection, order_id: str) -> tuple[Any, OrderView] | None:
    row = conn.execute(select(r.orders).where(r.orders.c.order_id == order_id)).first()
    if row is None:
        return None
    refundable = refundable_amount(conn, row)
    view = OrderView(
        order_id=row.order_id,
        status=_status(row, refundable),
        amount=float(row.amount),
        refundable_amount=float(max(refundable, Decimal(0))),
        currency=row.currency,
        promised_by=_iso(_as_utc(row.promised_by)) or "",
        delivered_at=_iso(_as_utc(row.delivered_at)),
    )
    return row, view


@pack.read_tool(
    description="Read one of the requester's orders.",
    required_scope="orders:read",
    arguments=OrderRef,
    resource_argument="order_id",
    model_view=ModelView(
        untouchable_fields=("order_id", "amount", "refundable_amount", "currency", "status")
    ),
    user_view="Order {order_id}: {status}, refundable {refundable_amount} {currency}",
)
def get_order(ctx: ToolContext, args: OrderRef) -> ToolResult[OrderView] | ToolFailure:
    with ctx.engine.connect() as conn:
        found = order_view(conn, args.order_id)
    if found is None or not owned(found[0], ctx.principal):
        return ToolFailure(
            "order_not_found",
            f"no order {args.order_id} on the account of {ctx.principal.user_id}",
        )
    row, view = found
    return ToolResult(
        view,
        receipt_id=f"order-read-{view.order_id}",
        facts=ctx.facts(
            view.order_id,
            order_status=view.status,
            amount=view.amount,
            refundable_amount=view.refundable_amount,
            currency=view.currency,
        ),
        resources=[
            ctx.resource(
                view.order_id, "order", owner_user_id=row.customer_id, tenant_id=row.tenant_id
            )
        ],
    )


@pack.read_tool(
    description="Read the requester's customer profile.",
    required_scope="orders:read",
    arguments=CustomerRef,
    resource_argument="customer_id",
    user_view="Customer {customer_id}: {name} ({tier})",
)
def get_customer(ctx: ToolContext, args: CustomerRef) -> ToolResult[CustomerView] | ToolFailure:
    with ctx.engine.connect() as conn:
        row = conn.execute(
            select(r.customers).where(r.customers.c.customer_id == args.customer_id)
        ).first()
    if row is None or not owned(row, ctx.principal):
        return ToolFailure(
            "customer_not_found",
            f"no customer {args.customer_id} visible to {ctx.principal.user_id}",
        )
    view = CustomerView(
        customer_id=row.customer_id, name=row.name, language=row.language, tier=row.tier
    )
    return ToolResult(
        view,
        receipt_id=f"customer-read-{row.customer_id}",
        facts=ctx.facts(row.customer_id, language=row.language),
        resources=[
            ctx.resource(
                row.customer_id, "customer", owner_user_id=row.customer_id, tenant_id=row.tenant_id
            )
        ],
    )


@pack.read_tool(
    description="Search the approved returns and shipping policies.",
    required_scope="policies:read",
    arguments=PolicyQuery,
    model_view=ModelView(
        mode="slim",
        list_field="results",
        keep_fields=("source_id", "title", "text"),
        truncate_words=150,
        max_items=6,
        untouchable_fields=("source_id", "revision"),
    ),
    user_view="Policy search: {results_count} passages",
)
def search_returns_policy(ctx: ToolContext, args: PolicyQuery) -> ToolResult[PolicyResults]:
    """Policy evidence from the versioned document store (tenant-filtered, only approved
    revisions in force at ``ctx.now``), ranked by the process's retriever
    (``AGENTLEDGER_RETRIEVAL``: full-text by default, semantic or fused with the extra)."""
    hits = search_passages(ctx.engine, args.query, ctx.principal.tenant_id, ctx.now, limit=3)
    evidence = [hit.evidence() for hit in hits]
    # The full result (stored in the ledger) says why each passage was retrieved: which
    # retriever ranked it where, with what score. The model's view keeps only the passage.
    results: list[dict[str, JsonValue]] = [
        e.model_dump(mode="json")
        | {"retrieved_by": [rank.model_dump(mode="json") for rank in hit.retrieved_by]}
        for e, hit in zip(evidence, hits, strict=True)
    ]
    return ToolResult(
        PolicyResults(results=results),
        receipt_id=f"policy-search-{ctx.operation_id}",
        evidence=evidence,
    )
