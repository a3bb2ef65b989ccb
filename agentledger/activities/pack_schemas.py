"""Each pack's system of record under Alembic: its own migration history and version table.

A pack ships a ``migrations`` directory (``env.py`` calling ``run_env``, ``script.py.mako`` and
``versions/``) and its ``install`` calls ``migrate_pack``. That runs on every worker start (a
schema already at its newest revision is recognised without loading Alembic) and on
``agentledger migrate``, under the pack's own advisory lock on PostgreSQL (concurrent workers
migrate one after another, the later ones finding nothing to do), in one transaction. The
version table is ``<pack>_alembic_version``, so the ledger's and each pack's histories share one
database without touching each other. A pack's first revision creates its tables only where they
are missing, so a database its ``install`` made before it had migrations is taken over as it is,
and the later revisions bring it to the current shape.

A fork's sandbox on PostgreSQL (a schema of production's database, reached by schema
translation) is made fresh at the pack's current shape instead: it lives for one fork, and
Alembic's reflection does not follow schema translation.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import Engine, MetaData

from agentledger.activities._sql import schema_transaction
from agentledger.activities.schema_versions import at_head


def version_table(pack: str) -> str:
    return f"{pack}_alembic_version"


def migrate_pack(engine: Engine, pack: str, migrations: Path, metadata: MetaData) -> None:
    """Bring ``pack``'s tables to its newest revision (``metadata``: that revision's shape)."""
    if engine.get_execution_options().get("schema_translate_map"):
        metadata.create_all(engine)  # a fork's sandbox schema, made fresh
        return
    if at_head(engine, migrations, version_table(pack)):
        return  # read without Alembic, which loads only where there is something to do
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations))
    with schema_transaction(engine, _lock_key(pack)) as conn:
        config.attributes["connection"] = conn
        config.attributes["version_table"] = version_table(pack)
        command.upgrade(config, "head")


def run_env() -> None:
    """A pack's ``migrations/env.py``: run on the connection ``migrate_pack`` handed in."""
    from alembic import context

    attributes = context.config.attributes
    connection = attributes.get("connection")
    if connection is None:
        raise RuntimeError("run a pack's migrations through migrate_pack(engine, ...)")
    context.configure(
        connection=connection,
        version_table=attributes["version_table"],
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _lock_key(pack: str) -> int:
    """A 63-bit advisory lock key of the pack's own (the ledger's is another)."""
    digest = hashlib.sha256(f"agentledger-pack-schema:{pack}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
