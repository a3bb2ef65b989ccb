"""Programmatic Alembic upgrades, safe to call from several workers at once."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from agentledger.activities._sql import schema_transaction

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

    Concurrent workers run one after another (``schema_transaction``), so the later ones see
    the finished schema and have nothing to do.
    """
    config = alembic_config()
    with schema_transaction(engine, _PG_LOCK_KEY) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
