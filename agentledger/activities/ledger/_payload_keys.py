"""Each workflow's own Temporal payload key, kept in the ledger's database beside the subject keys.

The payload codec (``app.payloads``) seals what a workflow sends through Temporal under a key of
that workflow's own, made the first time one of its payloads is sealed and stored wrapped under
the key ring (``payload_keys``). Shredding the run (an erasure or retention, ``shred_run``)
destroys the wrapped key, so whatever Temporal still holds of the history (in its database's
free pages, a backup of it, an export) opens with no key anywhere. A process keeps a key it read
for ``HELD_SECONDS`` at most: a minute after an erasure, no process anywhere opens what it sealed.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from threading import Lock
from typing import Any, TypeVar

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection, Engine, bindparam, select, update

from agentledger.activities._sql import WRITE_OPTIONS, insert_missing
from agentledger.activities.ledger._engine import translate_unavailable
from agentledger.activities.ledger._errors import ContentErased, LedgerUnavailable
from agentledger.activities.ledger._ring import KeyWrap, Ring
from agentledger.activities.ledger._tables import erased_runs, payload_keys

CACHED = 4096
HELD_SECONDS = 60.0
PATIENCE_SECONDS = 30.0
T = TypeVar("T")
PREFIX = "wk_"

_OF_WORKFLOW = select(payload_keys.c.key_id, payload_keys.c.kek_id, payload_keys.c.wrapped).where(
    payload_keys.c.workflow_id == bindparam("workflow_id")
)
_BY_ID = select(payload_keys.c.workflow_id, payload_keys.c.kek_id, payload_keys.c.wrapped).where(
    payload_keys.c.key_id == bindparam("key_id")
)
_SHREDDED = select(erased_runs.c.run_id).where(erased_runs.c.run_id == bindparam("run_id"))
"""Built once (every new workflow asks): building a statement costs more than running it."""


class PayloadKeyGone(ContentErased):
    """The workflow's payload key was destroyed with its run's content (or its run was shredded
    before it had one): its payloads open nowhere, and no new one is sealed for it."""


class WorkflowKeys:
    """Get-or-make a workflow's key (``sealing``) and find one by its id (``opening``).

    ``engine``: called on the first database access, so a process that never meets a workflow
    payload never connects. ``wrap`` and ``reload`` are the key ring, as for ``Sealer``."""

    def __init__(
        self,
        engine: Callable[[], Engine],
        wrap: KeyWrap,
        reload: Callable[[], KeyWrap] | None = None,
    ) -> None:
        self._engine = engine
        self._ring = Ring(wrap, reload)
        self._by_workflow: OrderedDict[str, tuple[float, str, AESGCM]] = OrderedDict()
        self._by_id: OrderedDict[str, tuple[float, AESGCM]] = OrderedDict()
        self._lock = Lock()

    def cached(self, workflow_id: str) -> tuple[str, AESGCM] | None:
        """The workflow's key if this process holds it still (no I/O)."""
        found = self._by_workflow.get(workflow_id)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1], found[2]

    def cached_id(self, key_id: str) -> AESGCM | None:
        found = self._by_id.get(key_id)
        return None if found is None or found[0] < time.monotonic() else found[1]

    def sealing(self, workflow_id: str) -> tuple[str, AESGCM]:
        """The workflow's key id and cipher, made and stored the first time (blocking)."""
        key_id, kek_id, wrapped = self._patiently(lambda engine: self._made(engine, workflow_id))
        if wrapped is None:
            raise PayloadKeyGone(f"workflow {workflow_id}'s content was erased: nothing is sealed")
        return self._remember(workflow_id, key_id, self._ring.cipher(kek_id, wrapped, key_id))

    def opening(self, key_id: str) -> AESGCM:
        """The cipher of the key ``key_id`` (blocking); ``PayloadKeyGone`` once destroyed."""
        row = self._patiently(lambda engine: _read(engine, _BY_ID, {"key_id": key_id}))
        if row is None or row.wrapped is None:
            raise PayloadKeyGone(
                f"payload sealed under workflow key {key_id}, which its run's erasure destroyed"
                if row is not None
                else f"payload sealed under workflow key {key_id}, which this ledger never held"
            )
        cipher = self._ring.cipher(row.kek_id, row.wrapped, key_id)
        return self._remember(row.workflow_id, key_id, cipher)[1]

    def _made(self, engine: Engine, workflow_id: str) -> tuple[str, str, str | None]:
        with engine.connect() as conn:
            row = self._stored(conn, workflow_id)
        if row is None:  # SQLite: a writer begins IMMEDIATE, never upgrading a read lock
            with engine.execution_options(**WRITE_OPTIONS).begin() as conn:
                self._make(conn, workflow_id)
                row = self._stored(conn, workflow_id)  # ours, or a concurrent first payload's
        assert row is not None
        return row

    def _patiently(self, work: Callable[[Engine], T]) -> T:
        """``work`` on the ledger, through a failover: a refused or dropped connection is
        tried again for up to ``PATIENCE_SECONDS`` (a run started meanwhile waits for its key
        instead of failing), then ``LedgerUnavailable``. Each try is idempotent."""
        deadline, pause = time.monotonic() + PATIENCE_SECONDS, 0.1
        while True:
            engine = self._engine()
            try:
                with translate_unavailable(engine.url):
                    return work(engine)
            except LedgerUnavailable:
                if time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 2.0)

    def _stored(self, conn: Connection, workflow_id: str) -> tuple[str, str, str | None] | None:
        row = conn.execute(_OF_WORKFLOW, {"workflow_id": workflow_id}).first()
        return None if row is None else (row.key_id, row.kek_id, row.wrapped)

    def _make(self, conn: Connection, workflow_id: str) -> None:
        # Never a new key for a shredded run.
        if conn.execute(_SHREDDED, {"run_id": workflow_id}).first() is not None:
            raise PayloadKeyGone(f"run {workflow_id}'s content was erased: nothing is sealed")
        key_id = f"{PREFIX}{uuid.uuid4().hex}"
        values = {
            "key_id": key_id,
            "workflow_id": workflow_id,
            **self._ring.wrapped(AESGCM.generate_key(bit_length=256), key_id),
            "created_at": datetime.now(UTC),
        }
        insert_missing(conn, payload_keys, [values])

    def _remember(self, workflow_id: str, key_id: str, cipher: AESGCM) -> tuple[str, AESGCM]:
        until = time.monotonic() + HELD_SECONDS
        with self._lock:
            for cache in (self._by_workflow, self._by_id):
                while len(cache) >= CACHED:
                    cache.popitem(last=False)  # the oldest read first
            self._by_workflow.pop(workflow_id, None)
            self._by_id.pop(key_id, None)
            self._by_workflow[workflow_id] = (until, key_id, cipher)
            self._by_id[key_id] = (until, cipher)
        return key_id, cipher


def _read(engine: Engine, query: Any, params: dict[str, str]) -> Any:
    with engine.connect() as conn:
        return conn.execute(query, params).first()


def destroy_workflow_key(conn: Connection, workflow_id: str) -> int:
    """Destroy the workflow's payload key (its row stays, naming the key that is gone); how
    many were destroyed (0: it had none)."""
    statement = (
        update(payload_keys)
        .where(payload_keys.c.workflow_id == workflow_id, payload_keys.c.wrapped.is_not(None))
        .values(kek_id=None, wrapped=None, destroyed_at=datetime.now(UTC))
    )
    return int(conn.execute(statement).rowcount)
