"""Amounts widened to Numeric(13, 3), so KWD and BHD (three decimals) are held exactly.

Widening keeps every stored value. A database created before this revision kept Numeric(12, 2)
until now, and a KWD refund of 1.125 could not be written exactly.

Revision ID: support_0002
Revises: support_0001
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "support_0002"
down_revision = "support_0001"
branch_labels = None
depends_on = None

_TABLES = ("support_orders", "support_payments", "support_refunds")


def upgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column("amount", type_=sa.Numeric(13, 3), existing_type=sa.Numeric(12, 2))


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column("amount", type_=sa.Numeric(12, 2), existing_type=sa.Numeric(13, 3))
