"""Subject keys and the erasure log: crypto-shredding of a subject's run content.

Revision ID: 0003_subject_keys
Revises: 0002_answer_streams
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_subject_keys"
down_revision = "0002_answer_streams"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "subject_keys",
        sa.Column("key_id", sa.String(), nullable=False),
        sa.Column("tenant_id", sa.String(), nullable=False),
        sa.Column("subject_id", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("kek_id", sa.String(), nullable=True),
        sa.Column("wrapped", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("key_id"),
    )
    op.create_index("ix_subject_keys_subject", "subject_keys", ["tenant_id", "subject_id"])
    op.create_table(
        "erasures",
        sa.Column("erasure_id", sa.String(), nullable=False),
        sa.Column("tenant_id", sa.String(), nullable=False),
        sa.Column("subject_digest", sa.String(), nullable=False),
        sa.Column("erased_by", sa.String(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("affected", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("erasure_id"),
    )
    op.create_table(
        "erased_runs",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("erasure_id", sa.String(), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("log_digest", sa.String(), nullable=False),
        sa.Column("verified", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )


def downgrade() -> None:
    op.drop_table("erased_runs")
    op.drop_table("erasures")
    op.drop_index("ix_subject_keys_subject", table_name="subject_keys")
    op.drop_table("subject_keys")
