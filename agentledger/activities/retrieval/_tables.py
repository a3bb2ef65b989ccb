"""Retrieval tables: document revisions, their passages, a full-text index per backend, and the
passages' embeddings (``retrieval_embeddings``, used by semantic retrieval).

Approval and effective dates are copied onto each passage row, so a filtered search needs no
join beyond the index itself. SQLite indexes with an external-content FTS5 table (porter
stemming); PostgreSQL with a generated, weighted ``tsvector`` column under a GIN index.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
    update,
)

from agentledger.activities._sql import insert_missing, install_schema

metadata = MetaData()

documents = Table(
    "retrieval_documents",
    metadata,
    Column("tenant_id", String(64), primary_key=True),
    Column("document_id", String(100), primary_key=True),
    Column("revision", String(64), primary_key=True),
    Column("title", String(200), nullable=False),
    Column("effective_from", DateTime(timezone=True), nullable=False),
    Column("effective_to", DateTime(timezone=True), nullable=True),
    Column("approval_state", String(16), nullable=False),
    Column("approved_by", String(64), nullable=True),
    Column("content_hash", String(80), nullable=False),
    Column("superseded_by", String(64), nullable=True),
    Column("loaded_at", DateTime(timezone=True), nullable=False),
)

passages = Table(
    "retrieval_passages",
    metadata,
    Column("passage_id", Integer, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("document_id", String(100), nullable=False),
    Column("revision", String(64), nullable=False),
    Column("anchor", String(100), nullable=False),
    Column("source_id", String(200), nullable=False),
    Column("title", String(200), nullable=False),
    Column("text", Text, nullable=False),
    Column("content_hash", String(80), nullable=False),
    # Copies of the revision's state, kept in step by the store: filters without a join.
    Column("approved", Boolean, nullable=False, default=False),
    Column("effective_from", DateTime(timezone=True), nullable=False),
    Column("effective_until", DateTime(timezone=True), nullable=True),
    ForeignKeyConstraint(
        ["tenant_id", "document_id", "revision"],
        [documents.c.tenant_id, documents.c.document_id, documents.c.revision],
    ),
    UniqueConstraint("tenant_id", "source_id", "revision", name="uq_retrieval_passage_revision"),
    Index("ix_retrieval_passages_doc", "tenant_id", "document_id", "revision"),
)

embeddings = Table(
    "retrieval_embeddings",
    metadata,
    # One vector per passage row (a passage row is one revision of one passage) and model: a new
    # revision has new rows and so new vectors; a new model id never reads an old model's.
    Column("passage_id", Integer, ForeignKey(passages.c.passage_id), primary_key=True),
    Column("model_id", String(80), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("source_id", String(200), nullable=False),
    Column("revision", String(64), nullable=False),
    Column("content_hash", String(80), nullable=False),
    # sha256 of exactly the text embedded (heading and body): a passage an unchanged revision or
    # another tenant's copy repeats reuses the vector instead of running the model again.
    Column("embedded_hash", String(80), nullable=False),
    Column("dimensions", Integer, nullable=False),
    # float32, little-endian: bytea on PostgreSQL, a blob on SQLite; ranked in numpy.
    Column("vector", LargeBinary, nullable=False),
    Index("ix_retrieval_embeddings_text", "model_id", "embedded_hash"),
)

approval_signatures = Table(
    "retrieval_approval_signatures",
    metadata,
    # The assertion (a compact JWS) the issuer signed when a person approved the revision: its
    # subject is the approver, its digest the revision's content hash (identity.py verifies it).
    Column("tenant_id", String(64), primary_key=True),
    Column("document_id", String(100), primary_key=True),
    Column("revision", String(64), primary_key=True),
    Column("assertion", Text, nullable=False),
    ForeignKeyConstraint(
        ["tenant_id", "document_id", "revision"],
        [documents.c.tenant_id, documents.c.document_id, documents.c.revision],
    ),
)

generation = Table(
    "retrieval_generation",
    metadata,
    # One row, bumped in the same transaction as every change to which passages exist or are in
    # force: a process's in-memory copy of the passages' filter columns is valid while it matches.
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("generation", Integer, nullable=False),
)

FTS_TABLE = "retrieval_passages_fts"
_SQLITE_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "title, text, content='retrieval_passages', content_rowid='passage_id', "
    "tokenize='porter unicode61')",
)
_POSTGRES_DDL = (
    "ALTER TABLE retrieval_passages ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED ALWAYS AS "
    "(setweight(to_tsvector('english', title), 'A') || "
    "setweight(to_tsvector('english', text), 'B')) STORED",
    "CREATE INDEX IF NOT EXISTS ix_retrieval_passages_tsv ON retrieval_passages USING gin (tsv)",
)
_PG_LOCK_KEY = 0x5245_5452_4945  # "RETRIE": concurrent workers install once


def install(engine: Engine) -> None:
    """Create the tables and the full-text index if missing; safe from several processes."""
    install_schema(
        engine, metadata, _PG_LOCK_KEY, {"postgresql": _POSTGRES_DDL, "sqlite": _SQLITE_DDL}
    )


def bump_generation(conn: Connection) -> None:
    """Inside a write transaction that changed passages: readers' cached filters are stale."""
    insert_missing(conn, generation, [{"id": 1, "generation": 0}])
    conn.execute(update(generation).values(generation=generation.c.generation + 1))


def current_generation(conn: Connection) -> int:
    found = conn.execute(select(generation.c.generation)).scalar()
    return int(found or 0)
