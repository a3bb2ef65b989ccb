"""Fixtures for the contract tier beyond the shared database ones in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from agentledger.activities.ledger import Ledger, Sealer
from agentledger.packs.support.seed import seed
from tests.contract._ring import RING


@pytest.fixture
def support_engine(database_url: str) -> Iterator[Engine]:
    """A ledger database with the support pack's system of record seeded in it."""
    with Ledger.open(database_url) as ledger:
        seed(ledger.engine)
        yield ledger.engine


@pytest.fixture
def sealed(database_url: str) -> Iterator[Ledger]:
    """A ledger sealing every run's content under its subject's key, with ``RING``."""
    with Ledger.open(database_url) as opened:
        opened.seal_with(Sealer(RING))
        yield opened
