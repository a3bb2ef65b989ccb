"""Fixtures for the billing pack's tests: its system of record on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from agentledger.packs.billing.seed import seed_records

SEEDED_AT = datetime(2026, 9, 11, tzinfo=UTC)
"""Every current period began ten days before this and runs thirty days."""


@pytest.fixture
def billing_engine(database_url: str) -> Iterator[Engine]:
    engine = create_engine(database_url)
    assert seed_records(engine, SEEDED_AT) is True
    assert seed_records(engine, SEEDED_AT) is False
    yield engine
    engine.dispose()
