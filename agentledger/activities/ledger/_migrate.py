"""Programmatic Alembic upgrades, safe to call from several workers at once."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from agentledger.activities._sql import schema_transaction
from agentledger.activities.schema_versions import at_head

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "ledger_alembic_version"
"""Our own version table, so other stores can keep their own Alembic history in one database."""

# Any fixed 64-bit key: every process migrating the same PostgreSQL database takes this lock.
_PG_LOCK_KEY = 0x4C45_4447_4552  # "LEDGER"


def alembic_config() -> Config:
    from alembic.config import Config  # only where the schema is behind (``at_head``)

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` in one transaction.

    Concurrent workers run one after another (``schema_transaction``), so the later ones see
    the finished schema and have nothing to do; a schema already at head is seen as such
    without Alembic (``at_head``).
    """
    if revision == "head" and at_head(engine, MIGRATIONS, VERSION_TABLE):
        return
    from alembic import command

    config = alembic_config()
    with schema_transaction(engine, _PG_LOCK_KEY) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
