"""Event log, content-addressed stores, principal directory and read models.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def _exact_json() -> sa.JSON:
    # PostgreSQL ``json`` keeps the text byte for byte; see activities/ledger/_tables.py.
    return sa.JSON()


def _json() -> sa.JSON:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _time() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    _event_log()
    _content_stores()
    _read_models()


def _event_log() -> None:
    op.create_table(
        "run_events",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("recorded_at", _time(), nullable=False),
        sa.Column("manifest_hash", sa.String(), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("payload", _exact_json(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "seq", name="pk_run_events"),
    )


def _content_stores() -> None:
    op.create_table(
        "manifests",
        sa.Column("hash", sa.String(), primary_key=True),
        sa.Column("body", _exact_json(), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
    )
    op.create_table(
        "context_packets",
        sa.Column("packet_hash", sa.String(), primary_key=True),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("step", sa.String(), nullable=False),
        sa.Column("body", _exact_json(), nullable=False),
    )
    op.create_index("ix_context_packets_run_id", "context_packets", ["run_id"])
    op.create_table(
        "tool_outputs",
        sa.Column("output_hash", sa.String(), primary_key=True),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("body", _exact_json(), nullable=False),
    )
    op.create_index("ix_tool_outputs_run_id", "tool_outputs", ["run_id"])
    op.create_table(
        "principals",
        sa.Column("user_id", sa.String(), primary_key=True),
        sa.Column("tenant_id", sa.String(), nullable=False),
        sa.Column("roles", _json(), nullable=False),
        sa.Column("scopes", _json(), nullable=False),
        sa.Column("display_name", sa.Text(), nullable=False),
    )


def _read_models() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(), primary_key=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("pack", sa.String(), nullable=False),
        sa.Column("principal_id", sa.String(), nullable=False),
        sa.Column("tenant_id", sa.String(), nullable=False),
        sa.Column("request_text", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text()),
        sa.Column("cited_source_ids", _json()),
        sa.Column("failure_reason", sa.Text()),
        sa.Column("created_at", _time(), nullable=False),
        sa.Column("updated_at", _time(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("manifest_hash", sa.String(), nullable=False),
    )
    op.create_index("ix_runs_updated_at", "runs", ["updated_at"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_table(
        "approvals",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("approval_id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("arguments", _json(), nullable=False),
        sa.Column("proposal_digest", sa.String(), nullable=False),
        sa.Column("requested_by", sa.String(), nullable=False),
        sa.Column("approver_role", sa.String(), nullable=False),
        sa.Column("expires_at", _time(), nullable=False),
        sa.Column("decided_by", sa.String()),
        sa.Column("reason", sa.Text()),
        sa.Column("updated_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "approval_id", name="pk_approvals"),
    )
    op.create_index("ix_approvals_status_updated", "approvals", ["status", "updated_at"])
    op.create_table(
        "receipts",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("idempotency_key", sa.String()),
        sa.Column("receipt_id", sa.String()),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "operation_id", name="pk_receipts"),
    )


def downgrade() -> None:
    for table in (
        "receipts",
        "approvals",
        "runs",
        "principals",
        "tool_outputs",
        "context_packets",
        "manifests",
        "run_events",
    ):
        op.drop_table(table)
