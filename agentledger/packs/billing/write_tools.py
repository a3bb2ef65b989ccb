"""The billing pack's consequential tools: cancel, pause, and a prorated credit.

Each is keyed on the runtime's idempotency key (a unique column), so a retry, a replay or a
crashed worker finds the row it wrote and returns the original receipt; ``reconcile`` answers
"did it happen?" by reading that row. Two runs (two keys) changing one subscription serialise on
its row: the transaction locks it (``SELECT ... FOR UPDATE`` under READ COMMITTED on PostgreSQL;
on SQLite it begins IMMEDIATE: ``ToolContext.write_engine``) before it checks.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from agentledger.packs.billing import money
from agentledger.packs.billing import records as r
from agentledger.packs.billing.definition import pack
from agentledger.packs.billing.tools import credit_due, not_found, owned
from agentledger.packs.billing.views import (
    Amount,
    Cancellation,
    Credit,
    Currency,
    Months,
    Pause,
    Reason,
    SubscriptionId,
)
from agentledger.sdk import FactBound, ToolContext, ToolFailure, ToolResult


def _id(prefix: str, key: str) -> str:
    return prefix + key.removeprefix("idem_")[:16]


def _day(value: datetime) -> str:
    return r.utc(value).date().isoformat()


def add_months(value: datetime, months: int) -> datetime:
    """The same day ``months`` later (the month's last day when it has fewer days)."""
    month0 = value.month - 1 + months
    year, month = value.year + month0 // 12, month0 % 12 + 1
    return value.replace(
        year=year, month=month, day=min(value.day, calendar.monthrange(year, month)[1])
    )


# ---------------------------------------------------------------------- changes (cancel, pause)
def _change(conn: Connection, key: str, action: str) -> Any:
    return conn.execute(
        select(r.changes).where(r.changes.c.idempotency_key == key, r.changes.c.action == action)
    ).first()


def _record_change(
    conn: Connection, ctx: ToolContext, row: Any, action: str, until: datetime, reason: str
) -> None:
    conn.execute(
        insert(r.changes).values(
            change_id=_id("chg_", ctx.key),
            subscription_id=row.subscription_id,
            action=action,
            effective_until=until,
            reason=reason,
            idempotency_key=ctx.key,
            requested_by=ctx.principal.user_id,
            created_at=ctx.now,
        )
    )


Planned = ToolFailure | tuple[datetime, str, dict[str, Any]]
"""A change judged against the locked subscription: refused, or (effective until, reason, the
subscription's new values)."""


def _change_once(
    ctx: ToolContext, subscription_id: str, action: str, plan: Callable[[Any], Planned]
) -> ToolFailure | None:
    """Make one change to one of the customer's subscriptions under the call's key, once: the
    row locked, ``plan`` judged against it, the change recorded with the new values. Returns
    the refusal, if any; a key that already made its change changes nothing again."""
    try:
        with ctx.write_engine().begin() as conn:
            row = owned(conn, ctx, subscription_id, lock=True)
            if _change(conn, ctx.key, action) is not None:
                return None
            if row is None:
                return not_found(ctx, subscription_id)
            planned = plan(row)
            if isinstance(planned, ToolFailure):
                return planned
            until, reason, values = planned
            _record_change(conn, ctx, row, action, until, reason)
            conn.execute(
                update(r.subscriptions)
                .where(r.subscriptions.c.subscription_id == subscription_id)
                .values(**values)
            )
    except IntegrityError:
        pass  # a concurrent attempt with the same key won; its row is the receipt
    return None


def _cancellation(ctx: ToolContext, change: Any) -> ToolResult[Cancellation]:
    view = Cancellation(
        change_id=change.change_id,
        subscription_id=change.subscription_id,
        status="cancelled",
        service_until=_day(change.effective_until),
    )
    facts = ctx.facts(view.subscription_id, status="cancelled", service_until=view.service_until)
    return ToolResult(view, receipt_id=view.change_id, facts=facts)


def find_cancellation(ctx: ToolContext) -> ToolResult[Cancellation] | None:
    with ctx.engine.connect() as conn:
        change = _change(conn, ctx.key, "cancel")
    return None if change is None else _cancellation(ctx, change)


@pack.write_tool(
    description="Cancel one of the customer's subscriptions at the end of its paid period "
    "(service continues until then). Requires a billing lead's approval.",
    required_scope="subscriptions:manage",
    reconcile=find_cancellation,
    resource_argument="subscription_id",
    user_view="Cancellation {change_id}: {subscription_id} ends after {service_until}",
)
def cancel_subscription(
    ctx: ToolContext, subscription_id: SubscriptionId, reason: Reason
) -> ToolResult[Cancellation] | ToolFailure:
    def plan(row: Any) -> Planned:
        if row.status == "cancelled":
            return ToolFailure("already_cancelled", f"{subscription_id} is cancelled")
        return r.utc(row.period_end), reason, {"status": "cancelled", "cancelled_at": ctx.now}

    failed = _change_once(ctx, subscription_id, "cancel", plan)
    return (
        failed
        or find_cancellation(ctx)
        or ToolFailure("change_lost", "the cancellation was not stored")
    )


def _pause(ctx: ToolContext, change: Any) -> ToolResult[Pause]:
    view = Pause(
        change_id=change.change_id,
        subscription_id=change.subscription_id,
        status="paused",
        resumes_on=_day(change.effective_until),
    )
    facts = ctx.facts(view.subscription_id, status="paused", resumes_on=view.resumes_on)
    return ToolResult(view, receipt_id=view.change_id, facts=facts)


def find_pause(ctx: ToolContext) -> ToolResult[Pause] | None:
    with ctx.engine.connect() as conn:
        change = _change(conn, ctx.key, "pause")
    return None if change is None else _pause(ctx, change)


@pack.write_tool(
    description="Pause one of the customer's active subscriptions for 1 to 3 months from the "
    "end of its paid period. Requires a billing lead's approval.",
    required_scope="subscriptions:manage",
    reconcile=find_pause,
    resource_argument="subscription_id",
    user_view="Pause {change_id}: {subscription_id} resumes on {resumes_on}",
)
def pause_subscription(
    ctx: ToolContext, subscription_id: SubscriptionId, months: Months
) -> ToolResult[Pause] | ToolFailure:
    def plan(row: Any) -> Planned:
        if row.status != "active":
            return ToolFailure("not_active", f"{subscription_id} is {row.status}")
        resumes = add_months(r.utc(row.period_end), months)
        return (
            resumes,
            f"paused for {months} month(s)",
            {"status": "paused", "paused_until": resumes},
        )

    failed = _change_once(ctx, subscription_id, "pause", plan)
    return failed or find_pause(ctx) or ToolFailure("change_lost", "the pause was not stored")


# ---------------------------------------------------------------------- credits
def _credit_by_key(conn: Connection, key: str) -> Any:
    return conn.execute(select(r.credits).where(r.credits.c.idempotency_key == key)).first()


def _credit(ctx: ToolContext, row: Any, left: Decimal | None = None) -> ToolResult[Credit]:
    view = Credit(
        credit_id=row.credit_id,
        subscription_id=row.subscription_id,
        invoice_id=row.invoice_id,
        amount=Decimal(str(row.amount)),
        currency=row.currency,
    )
    facts = ctx.facts(view.subscription_id, credit_available=left) if left is not None else ()
    return ToolResult(view, receipt_id=view.credit_id, facts=facts)


def find_credit(ctx: ToolContext) -> ToolResult[Credit] | None:
    with ctx.engine.connect() as conn:
        row = _credit_by_key(conn, ctx.key)
    return None if row is None else _credit(ctx, row)


def _credit_refusal(
    ctx: ToolContext, row: Any, amount: Decimal, currency: str, due: Decimal
) -> ToolFailure | None:
    """The system of record re-checks what it owns: currency, exactness, what is still due."""
    if currency != row.currency:
        return ToolFailure("currency_mismatch", f"{row.subscription_id} bills in {row.currency}")
    if money.exact(amount, currency) is None:
        return ToolFailure("inexact_amount", f"{amount} is not an exact amount of {currency}")
    if amount > due:
        return ToolFailure(
            "exceeds_credit_available",
            f"{money.text(amount, currency)} exceeds the {money.text(due, currency)} still due "
            f"on {row.subscription_id}",
        )
    return None


@pack.write_tool(
    description="Credit the customer the unused days of a subscription's paid period "
    "(at most the credit_available get_subscription reported). Requires approval.",
    required_scope="credits:request",
    reconcile=find_credit,
    resource_argument="subscription_id",
    fact_bounds=(
        FactBound(argument="amount", fact="credit_available", relation="at_most"),
        FactBound(argument="currency", fact="currency", relation="equals"),
    ),
    user_view="Credit {credit_id}: {amount} {currency} on {subscription_id}",
)
def issue_prorated_credit(
    ctx: ToolContext,
    subscription_id: SubscriptionId,
    amount: Amount,
    currency: Currency,
    reason: Reason,
) -> ToolResult[Credit] | ToolFailure:
    try:
        with ctx.write_engine().begin() as conn:
            row = owned(conn, ctx, subscription_id, lock=True)
            if (done := _credit_by_key(conn, ctx.key)) is not None:
                return _credit(ctx, done)
            if row is None:
                return not_found(ctx, subscription_id)
            due, invoice_id = credit_due(conn, row, ctx)
            refusal = _credit_refusal(ctx, row, amount, currency, due)
            if refusal is not None or invoice_id is None:
                return refusal or ToolFailure("no_paid_period", "nothing has been paid to credit")
            conn.execute(
                insert(r.credits).values(
                    credit_id=_id("cr_", ctx.key),
                    subscription_id=subscription_id,
                    invoice_id=invoice_id,
                    amount=amount,
                    currency=currency,
                    reason=reason,
                    idempotency_key=ctx.key,
                    requested_by=ctx.principal.user_id,
                    created_at=ctx.now,
                )
            )
            left = due - amount
    except IntegrityError:
        left = None  # a concurrent attempt with the same key won; its row is the receipt
    with ctx.engine.connect() as conn:
        stored = _credit_by_key(conn, ctx.key)
    if stored is None:
        return ToolFailure("credit_lost", "the credit was not stored")
    return _credit(ctx, stored, left)
