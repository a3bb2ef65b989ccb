"""Alembic history of the billing pack's system of record (``activities.pack_schemas``)."""
