"""What every part of the ledger shares: the engine, the limits, and transaction scopes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine

from agentledger.activities._sql import SqlStore
from agentledger.activities.ledger._engine import translate_unavailable
from agentledger.activities.ledger._errors import ContentErased
from agentledger.activities.ledger._subjects import SEALED, Sealer

DEFAULT_MAX_EVENT_BYTES = 256 * 1024
"""Events travel through Temporal payloads (2 MB hard limit); large content goes by hash."""

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Packets and full tool outputs are stored by hash, outside workflow history."""


class LedgerBase(SqlStore):
    sealer: Sealer | None = None
    """Seals each run's events under its subject's key (``seal_with``); ``None``: in clear."""

    def __init__(self, engine: Engine, *, max_event_bytes: int, max_body_bytes: int) -> None:
        super().__init__(engine)
        self.max_event_bytes = max_event_bytes
        self.max_body_bytes = max_body_bytes

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        with translate_unavailable(self._engine.url), self._engine.connect() as conn:
            yield conn

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A write transaction for ``append_in`` and the caller's own statements together.

        On SQLite it takes the write lock up front (``BEGIN IMMEDIATE``), so concurrent writers
        queue on the busy timeout instead of failing when a read lock cannot be upgraded.
        """
        with translate_unavailable(self._engine.url), self._writer.begin() as conn:
            yield conn

    _writing = begin

    def open_stored(self, conn: Connection, texts: Sequence[str]) -> list[str]:
        """Stored payloads in clear: sealed ones opened with their subject keys."""
        if self.sealer is not None:
            return self.sealer.open(conn, texts)
        if any(t.startswith(SEALED) for t in texts):
            raise ContentErased(
                "the ledger holds sealed events and was opened without its key ring"
            )
        return list(texts)
