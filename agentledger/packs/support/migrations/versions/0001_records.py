"""The support records as ``install`` first created them (amounts Numeric(12, 2)), where missing.

A database whose tables ``install`` made before the pack had migrations keeps them as they are;
the next revisions bring them up to date.

Revision ID: support_0001
Revises:
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "support_0001"
down_revision = None
branch_labels = None
depends_on = None

_at = sa.DateTime(timezone=True)


def upgrade() -> None:
    m = sa.MetaData()
    sa.Table(
        "support_customers", m,
        sa.Column("customer_id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("email", sa.String(200), nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("tier", sa.String(32), nullable=False),
    )  # fmt: skip
    sa.Table(
        "support_orders", m,
        sa.Column("order_id", sa.String(64), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("customer_id", sa.ForeignKey("support_customers.customer_id"), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("amount", sa.Numeric(12, 2), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("ordered_at", _at, nullable=False),
        sa.Column("promised_by", _at, nullable=False),
        sa.Column("delivered_at", _at, nullable=True),
        sa.Column("items", sa.Text, nullable=False),
    )  # fmt: skip
    sa.Table(
        "support_payments", m,
        sa.Column("payment_id", sa.String(64), primary_key=True),
        sa.Column("order_id", sa.ForeignKey("support_orders.order_id"), nullable=False),
        sa.Column("amount", sa.Numeric(12, 2), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("method", sa.String(32), nullable=False),
        sa.Column("captured_at", _at, nullable=False),
    )  # fmt: skip
    sa.Table(
        "support_refunds", m,
        sa.Column("refund_id", sa.String(64), primary_key=True),
        sa.Column("order_id", sa.ForeignKey("support_orders.order_id"), nullable=False),
        sa.Column("amount", sa.Numeric(12, 2), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("reason", sa.String(200), nullable=False),
        sa.Column("idempotency_key", sa.String(80), nullable=False),
        sa.Column("requested_by", sa.String(64), nullable=False),
        sa.Column("created_at", _at, nullable=False),
        sa.UniqueConstraint("idempotency_key", name="uq_support_refunds_idempotency_key"),
    )  # fmt: skip
    sa.Table(
        "support_messages", m,
        sa.Column("message_id", sa.String(64), primary_key=True),
        sa.Column("customer_id", sa.ForeignKey("support_customers.customer_id"), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("idempotency_key", sa.String(80), nullable=False, unique=True),
        sa.Column("created_at", _at, nullable=False),
    )  # fmt: skip
    m.create_all(op.get_bind(), checkfirst=True)


def downgrade() -> None:
    for table in ("support_messages", "support_refunds", "support_payments"):
        op.drop_table(table)
    op.drop_table("support_orders")
    op.drop_table("support_customers")
