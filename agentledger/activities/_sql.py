"""SQL helpers shared by every store (ledger, memory, retrieval): the store base, one spelling of
an upsert, and schema installs serialised across workers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import MetaData, Table, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

WRITE_OPTIONS: Mapping[str, Any] = {"ledger_write": True}
"""Execution options of a write: on SQLite the engine then begins ``IMMEDIATE`` (taking the write
lock up front), see ``activities.ledger.build_engine``."""


class SqlStore:
    """A store over the ledger's engine: reads on the engine, writes through ``_writer``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**WRITE_OPTIONS)

    @property
    def engine(self) -> Engine:
        return self._engine


@contextmanager
def schema_transaction(engine: Engine, lock_key: int) -> Iterator[Connection]:
    """One write transaction for a schema change, holding on PostgreSQL the advisory lock
    ``lock_key`` (any fixed 64-bit number, one per schema).

    Concurrent workers installing the same schema queue on the lock; the DDL is transactional, so
    the later ones find the schema finished and have nothing to do. SQLite serialises writers.
    """
    with engine.connect() as conn:
        conn = conn.execution_options(**WRITE_OPTIONS)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key})
            yield conn


def install_schema(
    engine: Engine, metadata: MetaData, lock_key: int, ddl: Mapping[str, Sequence[str]]
) -> None:
    """Create ``metadata``'s missing tables, then run ``ddl[dialect name]`` (statements that must
    be idempotent, such as ``CREATE ... IF NOT EXISTS``); safe from several processes at once."""
    with schema_transaction(engine, lock_key) as conn:
        metadata.create_all(conn)
        for statement in ddl.get(conn.dialect.name, ()):
            conn.execute(text(statement))


def insert_for(dialect_name: str, table: Table) -> Any:
    """The dialect's INSERT, which knows ``ON CONFLICT`` (both backends spell it the same)."""
    if dialect_name == "postgresql":
        return postgresql_insert(table)
    if dialect_name == "sqlite":
        return sqlite_insert(table)
    raise ValueError(f"unsupported dialect {dialect_name}")


def upsert(conn: Connection, table: Table, row: dict[str, Any], key: Sequence[str]) -> None:
    """Insert ``row``, or overwrite the one with the same ``key``: concurrent writers of one key
    both succeed (the last one wins) instead of one failing on the unique index."""
    conn.execute(_upsert(conn.dialect.name, table, tuple(row), tuple(key)), row)


def insert_missing(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert the rows not already there (by any unique index)."""
    if rows:
        conn.execute(_insert_missing(conn.dialect.name, table), list(rows))


# The statements are built once per shape: one reused keeps SQLAlchemy's cache key memoised,
# where one built per call is constructed and keyed again, which costs more than running it.


@lru_cache(maxsize=256)
def _upsert(dialect_name: str, table: Table, columns: tuple[str, ...], key: tuple[str, ...]) -> Any:
    statement = insert_for(dialect_name, table)
    changed = {c: statement.excluded[c] for c in columns if c not in key}
    return statement.on_conflict_do_update(index_elements=list(key), set_=changed)


@lru_cache(maxsize=128)
def _insert_missing(dialect_name: str, table: Table) -> Any:
    return insert_for(dialect_name, table).on_conflict_do_nothing()
