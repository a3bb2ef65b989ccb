"""Memory tables: records (one row per memory, with the columns retrieval filters on), their
lifecycle events, a full-text index, and the derived artifacts deletion must reach: cached
retrievals and profile summaries, each with the memory ids it was derived from.

Events never hold content, only ids, actors and reasons, so forgetting a memory erases its
content in exactly one place: the record row (and the index built from it).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Engine,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

from agentledger.activities._sql import install_schema

metadata = MetaData()
NO_USER = ""
"""``user_id`` of tenant-wide memories: a value, not NULL, so ``user_id IN (:me, '')`` is
indexable."""

records = Table(
    "memory_records",
    metadata,
    Column("row_id", Integer, primary_key=True, autoincrement=True),
    Column("memory_id", String(120), nullable=False, unique=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("category", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("claim_key", String(120), nullable=True),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    Column("content_text", Text, nullable=False),
    Column("record", JSON, nullable=False),
    Index("ix_memory_records_scope", "tenant_id", "user_id", "state"),
)

events = Table(
    "memory_events",
    metadata,
    Column("memory_id", String(120), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("actor", String(64), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("detail", JSON, nullable=False),
)

cache = Table(
    "memory_cache",
    metadata,
    Column("cache_key", String(80), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("valid_until", DateTime(timezone=True), nullable=False),
    Index("ix_memory_cache_scope", "tenant_id", "user_id"),
)

summaries = Table(
    "memory_summaries",
    metadata,
    Column("summary_id", String(200), primary_key=True),
    Column("tenant_id", String(64), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("built_at", DateTime(timezone=True), nullable=False),
)

derivations = Table(
    "memory_derivations",
    metadata,
    Column("artifact", String(220), primary_key=True),
    Column("memory_id", String(120), primary_key=True),
    Index("ix_memory_derivations_memory", "memory_id"),
)

FTS_TABLE = "memory_fts"
_SQLITE_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "content_text, tokenize='porter unicode61')",
)
_POSTGRES_DDL = (
    "ALTER TABLE memory_records ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED ALWAYS AS "
    "(to_tsvector('english', content_text)) STORED",
    "CREATE INDEX IF NOT EXISTS ix_memory_records_tsv ON memory_records USING gin (tsv)",
)
_PG_LOCK_KEY = 0x4D45_4D4F_5259  # "MEMORY"


def install(engine: Engine) -> None:
    """Create the tables and the full-text index if missing; safe from several processes."""
    install_schema(
        engine, metadata, _PG_LOCK_KEY, {"postgresql": _POSTGRES_DDL, "sqlite": _SQLITE_DDL}
    )
