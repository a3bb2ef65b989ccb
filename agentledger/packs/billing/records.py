"""The billing pack's system of record: subscriptions, their invoices, credits and changes.

SQLAlchemy Core, migrated by ``install`` on SQLite or PostgreSQL (``migrations``). Every write
is keyed on the runtime's idempotency key (a unique column), so a retried, replayed or
reconciled call finds the row it wrote instead of acting twice; writes to one subscription
serialise on its row
(``write_tools``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Column, DateTime, ForeignKey, MetaData, Numeric, String, Table
from sqlalchemy.engine import Engine

from agentledger.sdk import migrate_pack

metadata = MetaData()

AMOUNT = Numeric(12, 2)
"""Two decimal places: the pack bills in currencies with a minor unit of 2 (``money``)."""
MIGRATIONS = Path(__file__).with_name("migrations")
"""This schema's Alembic history: a change to the tables below is a new revision there."""

subscriptions = Table(
    "billing_subscriptions",
    metadata,
    Column("subscription_id", String(64), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("customer_id", String(64), nullable=False),
    Column("plan", String(64), nullable=False),
    Column("status", String(16), nullable=False),  # active | paused | cancelled
    Column("currency", String(3), nullable=False),
    Column("monthly_price", AMOUNT, nullable=False),
    Column("period_start", DateTime(timezone=True), nullable=False),
    Column("period_end", DateTime(timezone=True), nullable=False),
    Column("paused_until", DateTime(timezone=True), nullable=True),
    Column("cancelled_at", DateTime(timezone=True), nullable=True),
)

invoices = Table(
    "billing_invoices",
    metadata,
    Column("invoice_id", String(64), primary_key=True),
    Column("subscription_id", ForeignKey("billing_subscriptions.subscription_id"), nullable=False),
    Column("amount", AMOUNT, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("status", String(16), nullable=False),  # paid | open | void
    Column("period_start", DateTime(timezone=True), nullable=False),
    Column("period_end", DateTime(timezone=True), nullable=False),
    Column("issued_at", DateTime(timezone=True), nullable=False),
)

credits = Table(
    "billing_credits",
    metadata,
    Column("credit_id", String(64), primary_key=True),
    Column("subscription_id", ForeignKey("billing_subscriptions.subscription_id"), nullable=False),
    Column("invoice_id", ForeignKey("billing_invoices.invoice_id"), nullable=False),
    Column("amount", AMOUNT, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reason", String(200), nullable=False),
    Column("idempotency_key", String(80), nullable=False, unique=True),
    Column("requested_by", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

changes = Table(
    "billing_subscription_changes",
    metadata,
    Column("change_id", String(64), primary_key=True),
    Column("subscription_id", ForeignKey("billing_subscriptions.subscription_id"), nullable=False),
    Column("action", String(16), nullable=False),  # cancel | pause
    Column("effective_until", DateTime(timezone=True), nullable=False),
    Column("reason", String(200), nullable=False),
    Column("idempotency_key", String(80), nullable=False, unique=True),
    Column("requested_by", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
"""``effective_until``: a cancellation's last day of service, a pause's resume date."""


def install(engine: Engine) -> None:
    """Bring the pack's tables to their newest revision (``activities.pack_schemas``)."""
    migrate_pack(engine, "billing", MIGRATIONS, metadata)


def utc(value: datetime) -> datetime:
    """SQLite hands timezone-aware columns back naive; they were written in UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
