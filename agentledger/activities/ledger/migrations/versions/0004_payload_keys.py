"""Each workflow's own Temporal payload key, destroyed when its run is shredded.

Revision ID: 0004_payload_keys
Revises: 0003_subject_keys
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_payload_keys"
down_revision = "0003_subject_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "payload_keys",
        sa.Column("key_id", sa.String(), nullable=False),
        sa.Column("workflow_id", sa.String(), nullable=False),
        sa.Column("kek_id", sa.String(), nullable=True),
        sa.Column("wrapped", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("destroyed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("key_id"),
        sa.UniqueConstraint("workflow_id"),
    )


def downgrade() -> None:
    op.drop_table("payload_keys")
