"""Alembic environment of the support pack's system of record (``activities.pack_schemas``)."""

from agentledger.sdk import run_pack_migrations

run_pack_migrations()
