"""Answer streams: an answer step's text as it is generated, outside the log.

Revision ID: 0002_answer_streams
Revises: 0001_initial
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_answer_streams"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "answer_streams",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("step", sa.String(), nullable=False),
        sa.Column("step_no", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "number", name="pk_answer_streams"),
    )
    op.create_table(
        "answer_chunks",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("offset", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "number", "offset", name="pk_answer_chunks"),
    )


def downgrade() -> None:
    op.drop_table("answer_chunks")
    op.drop_table("answer_streams")
