"""The billing pack's read tools: the customer's own subscriptions and invoices, nobody else's.

Another customer's subscription is reported exactly like a missing one (no existence leak).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from agentledger.packs.billing import money
from agentledger.packs.billing import records as r
from agentledger.packs.billing.definition import pack
from agentledger.packs.billing.views import (
    Invoice,
    InvoiceList,
    Subscription,
    SubscriptionId,
    SubscriptionList,
    SubscriptionSummary,
)
from agentledger.sdk import ModelView, ResourceRef, ToolContext, ToolFailure, ToolResult


def owned(conn: Connection, ctx: ToolContext, subscription_id: str, *, lock: bool = False) -> Any:
    """The subscription row if it is the acting customer's (locked until commit if ``lock``)."""
    query = select(r.subscriptions).where(
        r.subscriptions.c.subscription_id == subscription_id,
        r.subscriptions.c.customer_id == ctx.principal.user_id,
        r.subscriptions.c.tenant_id == ctx.principal.tenant_id,
    )
    return conn.execute(query.with_for_update() if lock else query).first()


def not_found(ctx: ToolContext, subscription_id: str) -> ToolFailure:
    return ToolFailure(
        "subscription_not_found",
        f"no subscription {subscription_id} on the account of {ctx.principal.user_id}",
    )


def credit_due(conn: Connection, row: Any, ctx: ToolContext) -> tuple[Decimal, str | None]:
    """The prorated credit still due now, and the paid invoice it is due on (if any)."""
    invoice = conn.execute(
        select(r.invoices)
        .where(r.invoices.c.subscription_id == row.subscription_id)
        .where(r.invoices.c.status == "paid")
        .order_by(r.invoices.c.period_end.desc())
    ).first()
    if invoice is None:
        return Decimal(0).quantize(money.quantum(row.currency)), None
    credited = conn.execute(
        select(func.coalesce(func.sum(r.credits.c.amount), 0)).where(
            r.credits.c.invoice_id == invoice.invoice_id
        )
    ).scalar_one()
    period = (r.utc(invoice.period_start), r.utc(invoice.period_end))
    due = money.prorated(
        Decimal(str(invoice.amount)), row.currency, period, ctx.now, Decimal(str(credited))
    )
    return due, invoice.invoice_id


def subscription_view(conn: Connection, row: Any, ctx: ToolContext) -> Subscription:
    due, _invoice = credit_due(conn, row, ctx)
    return Subscription(
        subscription_id=row.subscription_id,
        plan=row.plan,
        status=row.status,
        currency=row.currency,
        monthly_price=Decimal(str(row.monthly_price)),
        period_start=r.utc(row.period_start).date().isoformat(),
        period_end=r.utc(row.period_end).date().isoformat(),
        paused_until=r.utc(row.paused_until).date().isoformat() if row.paused_until else None,
        credit_available=due,
    )


def resource_of(ctx: ToolContext, row: Any) -> ResourceRef:
    return ctx.resource(
        row.subscription_id,
        "subscription",
        owner_user_id=row.customer_id,
        tenant_id=row.tenant_id,
    )


@pack.read_tool(
    description="List the customer's own subscriptions: id, plan and status of each.",
    required_scope="billing:read",
    user_view="{count} subscription(s): {subscriptions_titles}",
)
def list_subscriptions(ctx: ToolContext) -> ToolResult[SubscriptionList]:
    with ctx.engine.connect() as conn:
        rows = conn.execute(
            select(r.subscriptions)
            .where(r.subscriptions.c.customer_id == ctx.principal.user_id)
            .where(r.subscriptions.c.tenant_id == ctx.principal.tenant_id)
            .order_by(r.subscriptions.c.subscription_id)
        ).all()
    summaries = [
        SubscriptionSummary(subscription_id=row.subscription_id, plan=row.plan, status=row.status)
        for row in rows
    ]
    return ToolResult(
        SubscriptionList(subscriptions=summaries, count=len(summaries)),
        receipt_id=f"subscriptions-read-{ctx.principal.user_id}",
        facts=[
            f for s in summaries for f in ctx.facts(s.subscription_id, plan=s.plan, status=s.status)
        ],
        resources=[resource_of(ctx, row) for row in rows],
    )


@pack.read_tool(
    description="Read one of the customer's subscriptions, with the prorated credit due now.",
    required_scope="billing:read",
    resource_argument="subscription_id",
    model_view=ModelView(
        untouchable_fields=("subscription_id", "status", "currency", "credit_available")
    ),
    user_view="Subscription {subscription_id}: {plan}, {status}, "
    "credit due {credit_available} {currency}",
)
def get_subscription(
    ctx: ToolContext, subscription_id: SubscriptionId
) -> ToolResult[Subscription] | ToolFailure:
    with ctx.engine.connect() as conn:
        row = owned(conn, ctx, subscription_id)
        if row is None:
            return not_found(ctx, subscription_id)
        view = subscription_view(conn, row, ctx)
    facts = ctx.facts(
        view.subscription_id,
        plan=view.plan,
        status=view.status,
        currency=view.currency,
        credit_available=view.credit_available,
        period_end=view.period_end,
    )
    return ToolResult(
        view,
        receipt_id=f"subscription-read-{view.subscription_id}",
        facts=facts,
        resources=[resource_of(ctx, row)],
    )


@pack.read_tool(
    description="List a subscription's invoices (newest first) and its open balance.",
    required_scope="billing:read",
    resource_argument="subscription_id",
    model_view=ModelView(mode="slim", list_field="invoices", max_items=6),
    user_view="{invoices_count} invoice(s) for {subscription_id}, open balance {open_balance}",
)
def list_invoices(
    ctx: ToolContext, subscription_id: SubscriptionId
) -> ToolResult[InvoiceList] | ToolFailure:
    with ctx.engine.connect() as conn:
        row = owned(conn, ctx, subscription_id)
        if row is None:
            return not_found(ctx, subscription_id)
        found = conn.execute(
            select(r.invoices)
            .where(r.invoices.c.subscription_id == subscription_id)
            .order_by(r.invoices.c.period_end.desc())
        ).all()
    invoices = [_invoice(i) for i in found]
    balance = sum((i.amount for i in invoices if i.status == "open"), Decimal(0))
    listing = InvoiceList(subscription_id=subscription_id, invoices=invoices, open_balance=balance)
    latest = invoices[0] if invoices else None
    facts = ctx.facts(
        subscription_id,
        invoice_count=len(invoices),
        open_balance=balance,
        latest_invoice_id=latest.invoice_id if latest else None,
        latest_invoice_amount=latest.amount if latest else None,
    )
    return ToolResult(listing, receipt_id=f"invoices-read-{subscription_id}", facts=facts)


def _invoice(row: Any) -> Invoice:
    return Invoice(
        invoice_id=row.invoice_id,
        amount=Decimal(str(row.amount)),
        currency=row.currency,
        status=row.status,
        period_start=r.utc(row.period_start).date().isoformat(),
        period_end=r.utc(row.period_end).date().isoformat(),
    )
