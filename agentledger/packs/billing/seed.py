"""Sample customers, a billing lead, and their subscriptions and invoices.

Periods are laid out around the day the records are seeded (each current period started ten
days before it and runs thirty days), so a demo always has unused days to credit; tests seed at
a fixed ``now``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine

from agentledger.packs.billing import records as r
from agentledger.sdk import Principal

TENANT = "northwind"
CUSTOMER_SCOPES = frozenset({"billing:read", "subscriptions:manage", "credits:request"})
APPROVER_ROLE = "approver"  # the runtime's approval role; billing_lead names the duty

PRINCIPALS = (
    Principal(
        user_id="cust_ana",
        tenant_id=TENANT,
        roles=frozenset({"customer"}),
        scopes=CUSTOMER_SCOPES,
        display_name="Ana Lima",
    ),
    Principal(
        user_id="cust_ben",
        tenant_id=TENANT,
        roles=frozenset({"customer"}),
        scopes=CUSTOMER_SCOPES,
        display_name="Ben Okoro",
    ),
    Principal(
        user_id="billing_lead_1",
        tenant_id=TENANT,
        roles=frozenset({APPROVER_ROLE, "billing_lead"}),
        scopes=frozenset({"billing:read"}),
        display_name="Mara Jensen",
    ),
)
DEMO_APPROVER = "billing_lead_1"

# (subscription, customer, plan, monthly price, currency)
_SUBSCRIPTIONS = [
    ("sub_1001", "cust_ana", "Pro monthly", "30.00", "EUR"),
    ("sub_1002", "cust_ana", "Family plan", "18.00", "EUR"),
    ("sub_2001", "cust_ben", "Basic", "9.00", "USD"),
]
PERIOD_DAYS = 30


def seed(engine: Engine) -> bool:
    """Insert the sample records once, around today. False when they were already there."""
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return seed_records(engine, today)


def seed_records(engine: Engine, now: datetime) -> bool:
    """Insert the sample records with current periods that began ten days before ``now``."""
    r.install(engine)
    start = now - timedelta(days=10)
    previous = start - timedelta(days=PERIOD_DAYS)
    end = start + timedelta(days=PERIOD_DAYS)
    with engine.begin() as conn:
        if conn.execute(select(func.count()).select_from(r.subscriptions)).scalar_one() > 0:
            return False
        conn.execute(
            insert(r.subscriptions),
            [
                {
                    "subscription_id": sub,
                    "tenant_id": TENANT,
                    "customer_id": customer,
                    "plan": plan,
                    "status": "active",
                    "currency": currency,
                    "monthly_price": Decimal(price),
                    "period_start": start,
                    "period_end": end,
                    "paused_until": None,
                    "cancelled_at": None,
                }
                for sub, customer, plan, price, currency in _SUBSCRIPTIONS
            ],
        )
        conn.execute(insert(r.invoices), _invoices(previous, start, end))
    return True


def _invoices(previous: datetime, start: datetime, end: datetime) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for sub, _customer, _plan, price, currency in _SUBSCRIPTIONS:
        for suffix, (begin, finish) in (("01", (previous, start)), ("02", (start, end))):
            rows.append(
                {
                    "invoice_id": "inv_" + sub.removeprefix("sub_") + suffix,
                    "subscription_id": sub,
                    "amount": Decimal(price),
                    "currency": currency,
                    "status": "paid",
                    "period_start": begin,
                    "period_end": finish,
                    "issued_at": begin,
                }
            )
    return rows
