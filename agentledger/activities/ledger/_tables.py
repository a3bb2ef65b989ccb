"""Table definitions: the event log, content-addressed stores, the directory and read models.

The log (``run_events``) is the only source of truth. ``runs``, ``approvals`` and ``receipts`` are
read models written in the same transaction as the events they derive from, so a reader never
sees one without the other. Migrations in ``migrations/versions`` create exactly this schema
(``tests/contract`` compares them).

Identifiers are unbounded ``VARCHAR``: a length limit would truncate on one backend and fail on
the other.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Dialect,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    TypeDecorator,
)
from sqlalchemy.dialects.postgresql import JSONB


class UTCDateTime(TypeDecorator[datetime]):
    """Always aware UTC out, whatever the backend stores (SQLite keeps no offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        # Naive datetimes are taken as UTC: the runtime only ever produces UTC times.
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def exact_json() -> JSON:
    """Stored byte for byte (PostgreSQL ``json``), for the log and content-addressed bodies.

    JSONB would rewrite them: ``1e16`` comes back as the integer ``10000000000000000`` and
    U+0000 is refused, so a replayed state could hash differently from the one recorded.
    """
    return JSON()


def query_json() -> JSON:
    """JSONB on PostgreSQL for read-model columns, which are derived and meant to be queried."""
    return JSON().with_variant(JSONB(), "postgresql")


metadata = MetaData()

run_events = Table(
    "run_events",
    metadata,
    Column("run_id", String(), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("kind", String(), nullable=False),
    Column("recorded_at", UTCDateTime, nullable=False),
    Column("manifest_hash", String(), nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("payload", exact_json(), nullable=False),
    PrimaryKeyConstraint("run_id", "seq", name="pk_run_events"),
)

manifests = Table(
    "manifests",
    metadata,
    Column("hash", String(), primary_key=True),
    Column("body", exact_json(), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

context_packets = Table(
    "context_packets",
    metadata,
    Column("packet_hash", String(), primary_key=True),
    Column("run_id", String(), nullable=False, index=True),
    Column("step", String(), nullable=False),
    Column("body", exact_json(), nullable=False),
)

tool_outputs = Table(
    "tool_outputs",
    metadata,
    Column("output_hash", String(), primary_key=True),
    Column("run_id", String(), nullable=False, index=True),
    Column("operation_id", String(), nullable=False),
    Column("tool", String(), nullable=False),
    Column("body", exact_json(), nullable=False),
)

principals = Table(
    "principals",
    metadata,
    Column("user_id", String(), primary_key=True),
    Column("tenant_id", String(), nullable=False),
    Column("roles", query_json(), nullable=False),
    Column("scopes", query_json(), nullable=False),
    Column("display_name", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(), primary_key=True),
    Column("status", String(), nullable=False),
    Column("pack", String(), nullable=False),
    Column("principal_id", String(), nullable=False),
    Column("tenant_id", String(), nullable=False),
    Column("request_text", Text, nullable=False),
    Column("answer", Text),
    Column("cited_source_ids", query_json()),
    Column("failure_reason", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("last_seq", Integer, nullable=False),
    Column("manifest_hash", String(), nullable=False),
    Index("ix_runs_updated_at", "updated_at"),
    Index("ix_runs_status", "status"),
)

approvals = Table(
    "approvals",
    metadata,
    Column("run_id", String(), nullable=False),
    Column("approval_id", String(), nullable=False),
    Column("status", String(), nullable=False),
    Column("operation_id", String(), nullable=False),
    Column("tool", String(), nullable=False),
    Column("arguments", query_json(), nullable=False),
    Column("proposal_digest", String(), nullable=False),
    Column("requested_by", String(), nullable=False),
    Column("approver_role", String(), nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("decided_by", String()),
    Column("reason", Text),
    Column("updated_at", UTCDateTime, nullable=False),
    # The workflow numbers approvals per run (``apr_<seq>``): unique only within their run.
    PrimaryKeyConstraint("run_id", "approval_id", name="pk_approvals"),
    Index("ix_approvals_status_updated", "status", "updated_at"),
)

receipts = Table(
    "receipts",
    metadata,
    Column("run_id", String(), nullable=False),
    Column("operation_id", String(), nullable=False),
    Column("tool", String(), nullable=False),
    Column("status", String(), nullable=False),
    Column("idempotency_key", String()),
    Column("receipt_id", String()),
    Column("seq", Integer, nullable=False),
    PrimaryKeyConstraint("run_id", "operation_id", name="pk_receipts"),
)

# Answer streams: what an answer step's model call has said so far, for the customer waiting on
# it. Never part of the log or of Temporal history; pruned after the run ends.
answer_streams = Table(
    "answer_streams",
    metadata,
    Column("run_id", String(), nullable=False),
    Column("number", Integer, nullable=False),
    Column("step", String(), nullable=False),
    Column("step_no", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status", String(), nullable=False),
    Column("opened_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("run_id", "number", name="pk_answer_streams"),
)

answer_chunks = Table(
    "answer_chunks",
    metadata,
    Column("run_id", String(), nullable=False),
    Column("number", Integer, nullable=False),
    Column("offset", Integer, nullable=False),
    Column("text", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "number", "offset", name="pk_answer_chunks"),
)

# Crypto-shredding: one data key per subject (tenant and user), wrapped under the key ring; a
# run's events are sealed under its requester's key. Erasure destroys ``wrapped`` and keeps the
# row, so an erased run's envelopes still name the key that is gone.
subject_keys = Table(
    "subject_keys",
    metadata,
    Column("key_id", String(), primary_key=True),
    Column("tenant_id", String(), nullable=False),
    Column("subject_id", String(), nullable=False),
    Column("state", String(), nullable=False),
    Column("kek_id", String()),
    Column("wrapped", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("erased_at", UTCDateTime),
    Index("ix_subject_keys_subject", "tenant_id", "subject_id"),
)

# The erasure log: who erased which subject's content, when, why and what it touched. The subject
# is named by a digest only, so the log itself holds no personal data.
erasures = Table(
    "erasures",
    metadata,
    Column("erasure_id", String(), primary_key=True),
    Column("tenant_id", String(), nullable=False),
    Column("subject_digest", String(), nullable=False),
    Column("erased_by", String(), nullable=False),
    Column("reason", Text, nullable=False),
    Column("erased_at", UTCDateTime, nullable=False),
    Column("affected", exact_json(), nullable=False),
)

erased_runs = Table(
    "erased_runs",
    metadata,
    Column("run_id", String(), primary_key=True),
    Column("erasure_id", String(), nullable=False),
    Column("events", Integer, nullable=False),
    Column("log_digest", String(), nullable=False),
    Column("verified", String(), nullable=False),
)

# Each workflow's own Temporal payload key (``app.payloads``), wrapped under the key ring; made
# when its first payload is sealed. Shredding a run destroys ``wrapped``: what Temporal still
# holds of its history, in its database or a backup of it, no longer opens with any key.
payload_keys = Table(
    "payload_keys",
    metadata,
    Column("key_id", String(), primary_key=True),
    Column("workflow_id", String(), nullable=False, unique=True),
    Column("kek_id", String()),
    Column("wrapped", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("destroyed_at", UTCDateTime),
)

# The runs search in a sealed ledger, whose request texts are ciphertext (``_search_terms``):
# the fleet's search key, wrapped under the key ring and made once (the ring's rotation leaves
# it as is), and each run's request words as HMAC digests under it. Erasure deletes a run's.
search_keys = Table(
    "search_keys",
    metadata,
    Column("key_id", String(), primary_key=True),
    Column("kek_id", String(), nullable=False),
    Column("wrapped", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

run_terms = Table(
    "run_terms",
    metadata,
    Column("run_id", String(), primary_key=True),
    Column("term", String(), primary_key=True),
    Index("ix_run_terms_term", "term"),
)

# Runs whose start an erasure in progress refused (``refusals``): never stored, but Temporal keeps
# each one's history (its request, sealed under its own payload key) until the erasure finishes,
# which destroys that key and deletes the history. Ids only, no content.
refused_starts = Table(
    "refused_starts",
    metadata,
    Column("run_id", String(), primary_key=True),
    Column("tenant_id", String(), nullable=False),
    Column("subject_id", String(), nullable=False),
    Column("refused_at", UTCDateTime, nullable=False),
    Index("ix_refused_starts_subject", "tenant_id", "subject_id"),
)
