"""The billing records as ``install`` first created them, where missing.

A database whose tables ``install`` made before the pack had migrations keeps them as they are.

Revision ID: billing_0001
Revises:
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "billing_0001"
down_revision = None
branch_labels = None
depends_on = None

_at = sa.DateTime(timezone=True)
_money = sa.Numeric(12, 2)
_subscription = "billing_subscriptions.subscription_id"


def upgrade() -> None:
    m = sa.MetaData()
    sa.Table(
        "billing_subscriptions", m,
        sa.Column("subscription_id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("customer_id", sa.String(64), nullable=False),
        sa.Column("plan", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("monthly_price", _money, nullable=False),
        sa.Column("period_start", _at, nullable=False),
        sa.Column("period_end", _at, nullable=False),
        sa.Column("paused_until", _at, nullable=True),
        sa.Column("cancelled_at", _at, nullable=True),
    )  # fmt: skip
    sa.Table(
        "billing_invoices", m,
        sa.Column("invoice_id", sa.String(64), primary_key=True),
        sa.Column("subscription_id", sa.ForeignKey(_subscription), nullable=False),
        sa.Column("amount", _money, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("period_start", _at, nullable=False),
        sa.Column("period_end", _at, nullable=False),
        sa.Column("issued_at", _at, nullable=False),
    )  # fmt: skip
    sa.Table(
        "billing_credits", m,
        sa.Column("credit_id", sa.String(64), primary_key=True),
        sa.Column("subscription_id", sa.ForeignKey(_subscription), nullable=False),
        sa.Column("invoice_id", sa.ForeignKey("billing_invoices.invoice_id"), nullable=False),
        sa.Column("amount", _money, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("reason", sa.String(200), nullable=False),
        sa.Column("idempotency_key", sa.String(80), nullable=False, unique=True),
        sa.Column("requested_by", sa.String(64), nullable=False),
        sa.Column("created_at", _at, nullable=False),
    )  # fmt: skip
    sa.Table(
        "billing_subscription_changes", m,
        sa.Column("change_id", sa.String(64), primary_key=True),
        sa.Column("subscription_id", sa.ForeignKey(_subscription), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("effective_until", _at, nullable=False),
        sa.Column("reason", sa.String(200), nullable=False),
        sa.Column("idempotency_key", sa.String(80), nullable=False, unique=True),
        sa.Column("requested_by", sa.String(64), nullable=False),
        sa.Column("created_at", _at, nullable=False),
    )  # fmt: skip
    m.create_all(op.get_bind(), checkfirst=True)


def downgrade() -> None:
    for table in ("billing_subscription_changes", "billing_credits", "billing_invoices"):
        op.drop_table(table)
    op.drop_table("billing_subscriptions")
