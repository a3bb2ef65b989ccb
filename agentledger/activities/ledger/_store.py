"""The ledger: an append-only log of run events keyed by (run_id, seq), plus its read models.

Appends are idempotent so activities can retry freely: re-appending an event that is already
stored is a no-op success, while a *different* event at a taken (run_id, seq) is a
``LedgerConflict``. Appends are in order: a batch whose first event of a run does not follow one
already stored is a ``LedgerGap`` (nothing is written), so a log never shows a hole. Each append
call is one transaction covering the events and every read model derived from them.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from pydantic import ValidationError
from sqlalchemy import Connection, Select, Text, bindparam, cast, delete, func, select, tuple_
from sqlalchemy.engine import URL

from agentledger.activities.ledger._base import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES
from agentledger.activities.ledger._bulk import insert_rows
from agentledger.activities.ledger._codec import (
    EncodedEvent,
    encode_event,
    json_equal,
    load_events,
    loads,
    may_hold_nul,
)
from agentledger.activities.ledger._content import ContentStore
from agentledger.activities.ledger._engine import build_engine, translate_unavailable
from agentledger.activities.ledger._errors import LedgerConflict, LedgerError, LedgerGap
from agentledger.activities.ledger._migrate import upgrade
from agentledger.activities.ledger._observer import (
    SILENT,
    AppendObserver,
    newly_stored,
    notify,
    notify_on_commit,
)
from agentledger.activities.ledger._queries import ReadModelQueries
from agentledger.activities.ledger._readmodel_writes import Seal
from agentledger.activities.ledger._readmodels import apply_read_models
from agentledger.activities.ledger._streams import AnswerStreams
from agentledger.activities.ledger._subjects import Sealer, digest_of
from agentledger.activities.ledger._tables import (
    approvals,
    erased_runs,
    receipts,
    run_events,
    run_terms,
    runs,
)
from agentledger.domain.events import EVENT_ADAPTER, RunEvent
from agentledger.domain.upcasting import upcast

_REBUILD_CHUNK = 1000
# The payload as stored text: pydantic parses it directly, without a dict in between.
_PAYLOAD_TEXT = cast(run_events.c.payload, Text)
_STORED = select(run_events.c.schema_version, _PAYLOAD_TEXT)


class Ledger(ContentStore, ReadModelQueries, AnswerStreams):
    """Open one per process and share it: it owns a connection pool."""

    observer: AppendObserver = SILENT
    """Told of every event an append newly stores, after it commits (``observe``)."""

    @classmethod
    def open(
        cls,
        url: str | URL,
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        migrate: bool = True,
        sqlite_synchronous: str = "FULL",
        echo: bool = False,
    ) -> Ledger:
        """Connect to ``sqlite:///path`` or ``postgresql+psycopg://...`` and migrate to head.

        SQLite defaults to ``synchronous=FULL``: an acknowledged append survives power loss.
        """
        engine = build_engine(url, sqlite_synchronous=sqlite_synchronous, echo=echo)
        try:
            if migrate:
                with translate_unavailable(engine.url):
                    upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, max_event_bytes=max_event_bytes, max_body_bytes=max_body_bytes)

    def close(self) -> None:
        self._engine.dispose()

    def observe(self, observer: AppendObserver | None) -> None:
        """Report newly stored events to ``observer`` from now on (``None``: to nobody)."""
        self.observer = SILENT if observer is None else observer

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the log ---------------------------------------------------------------------------

    def append(self, events: Sequence[RunEvent]) -> int:
        """Store ``events`` and their read-model changes atomically; return how many were new."""
        encoded = self._encode(events)
        if not encoded:
            return 0
        started = time.perf_counter()
        with self._writing() as conn:
            new = self._append(conn, encoded)
        notify(self.observer, new, time.perf_counter() - started)
        return len(new)

    def append_in(self, conn: Connection, events: Sequence[RunEvent]) -> int:
        """``append`` inside the caller's transaction (ideally one from ``begin()``).

        After an error the caller must roll back. The observer hears of the new events when
        the caller's transaction commits, and never if it rolls back.
        """
        encoded = self._encode(events)
        if not encoded:
            return 0
        started = time.perf_counter()
        with translate_unavailable(self._engine.url):
            new = self._append(conn, encoded)
        notify_on_commit(conn, self.observer, new, time.perf_counter() - started)
        return len(new)

    def read(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        """The run's events with ``seq > after_seq``, in order, upcast to the current schema."""
        query = _STORED.where(run_events.c.run_id == run_id, run_events.c.seq > after_seq)
        return self._fetch(query)

    def read_latest(self, run_id: str) -> list[RunEvent]:
        """The run's events from its latest ``history_compacted`` on (all, if it has none): what
        its current state folds from, in a read that does not grow with the run's length."""
        of_run = run_events.c.run_id == run_id
        compacted = select(func.max(run_events.c.seq)).where(
            of_run, run_events.c.kind == "history_compacted"
        )
        query = _STORED.where(
            of_run, run_events.c.seq >= func.coalesce(compacted.scalar_subquery(), 1)
        )
        return self._fetch(query)

    def read_kinds(self, run_id: str, *kinds: str) -> list[RunEvent]:
        """The run's events of these kinds (``run_started``, …), in order."""
        query = _STORED.where(run_events.c.run_id == run_id, run_events.c.kind.in_(kinds))
        return self._fetch(query)

    def last_seq(self, run_id: str) -> int:
        """The highest stored seq of the run, 0 when it has none."""
        query = select(func.max(run_events.c.seq)).where(run_events.c.run_id == run_id)
        with self._reading() as conn:
            return conn.execute(query).scalar_one_or_none() or 0

    def rebuild_read_models(self, run_id: str | None = None) -> int:
        """Recompute read models from the log (one run, or all); returns the events replayed.
        Erased runs keep the rows their erasure left: their content is gone from the log."""
        erased = select(erased_runs.c.run_id)
        query = _STORED.where(run_events.c.run_id.not_in(erased))
        query = query.order_by(run_events.c.run_id, run_events.c.seq)
        if run_id is not None:
            query = query.where(run_events.c.run_id == run_id)
        replayed = 0
        with self._writing() as conn:
            for table in (runs, approvals, receipts, run_terms):
                wipe = delete(table).where(table.c.run_id.not_in(erased))
                conn.execute(wipe if run_id is None else wipe.where(table.c.run_id == run_id))
            stored = conn.execute(query.execution_options(yield_per=_REBUILD_CHUNK))
            for chunk in stored.partitions():
                rows = self._opened_rows(conn, [(v, t) for v, t in chunk])
                events = load_events(rows)
                nul = may_hold_nul(t for _, t in rows)
                apply_read_models(conn, events, clean=nul, seal=self._value_sealer(conn))
                replayed += len(events)
        return replayed

    def seal_with(self, sealer: Sealer | None) -> None:
        """Seal every run's events from now on under its subject's key (``None``: in clear)."""
        self.sealer = sealer

    # --- internals -------------------------------------------------------------------------

    def _fetch(self, query: Select[Any]) -> list[RunEvent]:
        with self._reading() as conn:
            rows = [(v, t) for v, t in conn.execute(query.order_by(run_events.c.seq))]
            return load_events(self._opened_rows(conn, rows))

    def _opened_rows(self, conn: Connection, rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
        texts = self.open_stored(conn, [t for _, t in rows])
        return [(v, t) for (v, _), t in zip(rows, texts, strict=True)]

    def _encode(self, events: Iterable[RunEvent]) -> list[EncodedEvent]:
        """Encode and size-check everything before touching the database.

        The batch comes back in (run_id, seq) order, so concurrent appenders take row locks in
        the same order, with exact duplicates dropped and contradictory ones refused.
        """
        encoded = [encode_event(event, self.max_event_bytes) for event in events]
        keys = [e.key for e in encoded]
        if any(a >= b for a, b in itertools.pairwise(keys)):
            encoded = _sorted_unique(encoded)
        return encoded

    def _append(self, conn: Connection, encoded: list[EncodedEvent]) -> list[RunEvent]:
        """The events stored anew (the others were already there, unchanged)."""
        _check_follows(conn, encoded)
        rows = [e.row for e in encoded] if self.sealer is None else self.sealer.seal(conn, encoded)
        # A plain executemany (no RETURNING): the driver's rowcount says how many were new.
        inserted = insert_rows(conn, rows)
        if inserted < len(encoded):
            self._check_unchanged(conn, encoded)
        new = newly_stored(conn, encoded, inserted)  # before the progress rows move
        # Read-model updates are idempotent, so events already stored may safely pass again.
        nul = may_hold_nul(e.body for e in encoded)
        apply_read_models(
            conn, [e.event for e in encoded], clean=nul, seal=self._value_sealer(conn)
        )
        return new

    def _value_sealer(self, conn: Connection) -> Seal | None:
        sealer = self.sealer
        return None if sealer is None else sealer.read_models(conn)

    def _check_unchanged(self, conn: Connection, encoded: list[EncodedEvent]) -> None:
        """Every event of the batch is now stored; each must be the one we meant to append.

        Identical bytes (or digests, for a sealed event) settle it. Otherwise the stored
        payload is upcast and compared as JSON, and failing that as a model: an event written
        by an older build and retried by a newer one is still the same event, and so is one
        whose frozensets another process serialised in another order.
        """
        keys = [e.key for e in encoded]
        query = select(run_events.c.run_id, run_events.c.seq, _PAYLOAD_TEXT).where(
            tuple_(run_events.c.run_id, run_events.c.seq).in_(keys)
        )
        stored = {(run, seq): text for run, seq, text in conn.execute(query)}
        for key, e in zip(keys, encoded, strict=True):
            text = stored.get(key)
            if text is None:
                raise LedgerError(f"run {key[0]} seq {key[1]} was neither inserted nor found")
            if digest_of(text) == hashlib.sha256(e.body).hexdigest():
                continue
            text = self.open_stored(conn, [text])[0]
            if not _same_event(loads(text), e):
                raise LedgerConflict(*key, f"stored {loads(text).get('kind')}, got {e.event.kind}")


_PREVIOUS = select(run_events.c.seq).where(
    run_events.c.run_id == bindparam("run_id"), run_events.c.seq == bindparam("seq")
)


def _check_follows(conn: Connection, encoded: list[EncodedEvent]) -> None:
    """Each run's first event in the batch follows one already stored (or is its first).

    Only the head is checked: a batch's own events are contiguous whenever the workflow sends
    every event not yet confirmed, and a retried batch whose head is stored passes as a no-op.
    Each head is one prepared lookup (an ``IN`` list of pairs is compiled anew every time).
    """
    heads: dict[str, int] = {}
    for e in encoded:  # sorted by (run_id, seq): the first of each run is its head
        heads.setdefault(e.key[0], e.key[1])
    for run, seq in heads.items():  # a workflow's flush holds one run: one lookup
        if seq > 1 and conn.execute(_PREVIOUS, {"run_id": run, "seq": seq - 1}).first() is None:
            raise LedgerGap(run, seq)


def _sorted_unique(encoded: list[EncodedEvent]) -> list[EncodedEvent]:
    by_key: dict[tuple[str, int], EncodedEvent] = {}
    for e in encoded:
        earlier = by_key.setdefault(e.key, e)
        if earlier.body != e.body:
            raise LedgerConflict(*e.key, "the batch holds two different events for it")
    return [by_key[key] for key in sorted(by_key)]


def _same_event(stored: dict[str, Any], new: EncodedEvent) -> bool:
    current = upcast(stored)
    if json_equal(current, loads(new.body)):
        return True
    try:
        return bool(EVENT_ADAPTER.validate_python(current) == new.event)
    except ValidationError:
        return False
