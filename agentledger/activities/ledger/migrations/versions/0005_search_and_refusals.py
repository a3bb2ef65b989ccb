"""The runs search over sealed request texts (the fleet's search key, each run's word digests),
and the runs refused while their subject was being erased.

Revision ID: 0005_search_and_refusals
Revises: 0004_payload_keys
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_search_and_refusals"
down_revision = "0004_payload_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_keys",
        sa.Column("key_id", sa.String(), nullable=False),
        sa.Column("kek_id", sa.String(), nullable=False),
        sa.Column("wrapped", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key_id"),
    )
    op.create_table(
        "run_terms",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("term", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "term"),
    )
    op.create_index("ix_run_terms_term", "run_terms", ["term"])
    op.create_table(
        "refused_starts",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("tenant_id", sa.String(), nullable=False),
        sa.Column("subject_id", sa.String(), nullable=False),
        sa.Column("refused_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_refused_starts_subject", "refused_starts", ["tenant_id", "subject_id"])


def downgrade() -> None:
    op.drop_index("ix_refused_starts_subject", table_name="refused_starts")
    op.drop_table("refused_starts")
    op.drop_index("ix_run_terms_term", table_name="run_terms")
    op.drop_table("run_terms")
    op.drop_table("search_keys")
