"""Alembic environment: migrations only ever run on a connection handed in by ``upgrade``.

There is no ``alembic.ini`` and no URL here: the ledger owns its connection (and, on PostgreSQL,
the advisory lock that keeps concurrent workers from migrating at once).
"""

from __future__ import annotations

from alembic import context

from agentledger.activities.ledger._migrate import VERSION_TABLE
from agentledger.activities.ledger._tables import metadata


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run ledger migrations through activities.ledger.upgrade(engine)")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
