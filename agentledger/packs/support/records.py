"""The support pack's system of record: customers, orders, payments, refunds, messages.

A real, if small, business database. Tools read and write it through SQLAlchemy; the refunds table
enforces the runtime's idempotency key with a unique constraint, so a retried or replayed
create_refund can never pay twice; two runs refunding one order serialise on the order row
(``write_tools``).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (
    Column,
    DateTime,
    ForeignKey,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Engine

from agentledger.sdk import migrate_pack

metadata = MetaData()

# Three decimal places so KWD/BHD (ISO 4217 exponent 3) are held exactly; an amount is checked
# against its own currency before it is written (``money.exact_amount``), never rounded here.
# A database created with the earlier Numeric(12, 2) is widened by migration support_0002.
AMOUNT = Numeric(13, 3)
MIGRATIONS = Path(__file__).with_name("migrations")
"""This schema's Alembic history: a change to the tables below is a new revision there."""

customers = Table(
    "support_customers",
    metadata,
    Column("customer_id", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("name", String(200), nullable=False),
    Column("email", String(200), nullable=False),
    Column("language", String(8), nullable=False),
    Column("tier", String(32), nullable=False),
)

orders = Table(
    "support_orders",
    metadata,
    Column("order_id", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("customer_id", ForeignKey("support_customers.customer_id"), nullable=False),
    Column("status", String(32), nullable=False),
    Column("amount", AMOUNT, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("ordered_at", DateTime(timezone=True), nullable=False),
    Column("promised_by", DateTime(timezone=True), nullable=False),
    Column("delivered_at", DateTime(timezone=True), nullable=True),
    Column("items", Text, nullable=False),
)

payments = Table(
    "support_payments",
    metadata,
    Column("payment_id", String(64), primary_key=True),
    Column("order_id", ForeignKey("support_orders.order_id"), nullable=False),
    Column("amount", AMOUNT, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("method", String(32), nullable=False),
    Column("captured_at", DateTime(timezone=True), nullable=False),
)

refunds = Table(
    "support_refunds",
    metadata,
    Column("refund_id", String(64), primary_key=True),
    Column("order_id", ForeignKey("support_orders.order_id"), nullable=False),
    Column("amount", AMOUNT, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reason", String(200), nullable=False),
    Column("idempotency_key", String(80), nullable=False),
    Column("requested_by", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("idempotency_key", name="uq_support_refunds_idempotency_key"),
)

messages = Table(
    "support_messages",
    metadata,
    Column("message_id", String(64), primary_key=True),
    Column("customer_id", ForeignKey("support_customers.customer_id"), nullable=False),
    Column("body", Text, nullable=False),
    Column("idempotency_key", String(80), nullable=False, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)


def install(engine: Engine) -> None:
    """Bring the pack's tables to their newest revision (the sample system of record owns its
    schema; ``activities.pack_schemas``)."""
    migrate_pack(engine, "support", MIGRATIONS, metadata)
