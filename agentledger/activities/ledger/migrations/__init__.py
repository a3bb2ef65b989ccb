"""Alembic environment for the ledger schema; run through ``activities.ledger.upgrade``."""
