"""Programmatic Alembic upgrades, safe to call from several workers at once."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "ledger_alembic_version"
"""Our own version table, so other stores can keep their own Alembic history in one database."""

# Any fixed 64-bit key: every process migrating the same PostgreSQL database takes this lock.
_PG_LOCK_KEY = 0x4C45_4447_4552  # "LEDGER"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` in one transaction.

    On PostgreSQL an advisory lock serialises concurrent workers; the DDL is transactional, so
    the loser sees the finished schema and has nothing to do. SQLite serialises writers anyway.
    """
    config = alembic_config()
    with engine.connect() as conn:
        conn = conn.execution_options(ledger_write=True)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
