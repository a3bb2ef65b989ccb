"""The support pack's system of record on a test database, and orders to refund in it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import insert
from sqlalchemy.engine import Engine

from agentledger.packs.support import records as r
from agentledger.packs.support.seed import PRINCIPALS

CUSTOMER = PRINCIPALS[0]


def add_order(engine: Engine, amount: str, currency: str, order_id: str | None = None) -> str:
    """A delivered order of ``CUSTOMER`` for ``amount`` in ``currency``; returns its id."""
    order_id = order_id or f"ord_{uuid.uuid4().int % 10**9}"
    at = datetime(2026, 8, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(
            insert(r.orders).values(
                order_id=order_id,
                tenant_id=CUSTOMER.tenant_id,
                customer_id=CUSTOMER.user_id,
                status="delivered",
                amount=Decimal(amount),
                currency=currency,
                ordered_at=at,
                promised_by=at,
                delivered_at=at,
                items="Desk lamp",
            )
        )
    return order_id
