"""Alembic history of the support pack's system of record (``activities.pack_schemas``)."""
