"""A replay journal: the durable system of record for a hosted benchmark environment.

A foreign benchmark keeps its state in memory (τ²'s domain DB, an AgentDojo suite environment).
What must survive a worker crash is not that object but the ordered list of calls that may change
it. Each such call is committed as one journal row, in the same transaction that claims the call's
idempotency key (unique), so:

- the environment of a sandbox is the fold of its journal over the benchmark's initial state; a
  worker that has no copy (it crashed, or another worker ran the last call) rebuilds it by
  replaying the journal, and checks the journal length before every call so a stale copy is never
  used;
- a retried write finds its key and returns the stored output instead of acting twice; a write
  that crashed before its commit left no row and simply never happened.

Failed writes are journalled too: a benchmark tool may change state before it raises, and the
replay must reproduce exactly what happened.

Two workers writing to one sandbox at once cannot both act on the same state: the row's key
(sandbox, ordinal) makes the append conditional, so the one whose copy went stale while it
computed loses the insert, drops its copy and computes again on the journal as it now stands (a
benchmark's own checks, e.g. a balance, therefore always see every committed call). Sandboxes are
per run, so this only happens when one run's activity is retried while its first attempt runs.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue
from sqlalchemy import JSON, Column, Integer, MetaData, String, Table, func, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

__all__ = ["CallResult", "Journal", "JournalEntry", "SandboxEnvironment"]

_METADATA = MetaData()
JOURNAL = Table(
    "conformance_journal",
    _METADATA,
    Column("sandbox", String(200), primary_key=True),
    Column("ordinal", Integer, primary_key=True),
    Column("idempotency_key", String(80), nullable=False, unique=True),
    Column("tool", String(100), nullable=False),
    Column("arguments", JSON, nullable=False),
    Column("status", String(16), nullable=False),
    Column("output", JSON, nullable=False),
)

APPEND_ATTEMPTS = 3
"""Appends lost to another worker before the conflict is left to the activity's retry."""

CRASH_AFTER_WRITES_ENV = "AGENTLEDGER_CONFORMANCE_CRASH_AFTER_WRITES"
"""Fault injection for the crash tests: SIGKILL this process right after its k-th journal commit,
i.e. after the effect is durable and before any receipt exists — the worst moment to die."""


@dataclass(frozen=True)
class CallResult:
    status: Literal["succeeded", "failed"]
    output: JsonValue
    error: str | None = None


@dataclass(frozen=True)
class JournalEntry:
    ordinal: int
    idempotency_key: str
    tool: str
    arguments: dict[str, JsonValue]
    result: CallResult


class SandboxEnvironment(Protocol):
    """One benchmark environment in memory. ``call`` never raises: failures are results."""

    def call(self, tool: str, arguments: dict[str, JsonValue]) -> CallResult: ...


class Journal:
    """Per-sandbox environments, cached in memory and rebuilt from the journal when needed."""

    def __init__(self, open_sandbox: Callable[[str], SandboxEnvironment], cache_size: int = 12):
        self._open = open_sandbox
        self._cache: OrderedDict[str, tuple[SandboxEnvironment, int]] = OrderedDict()
        self._cache_size = cache_size
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._writes = 0

    @staticmethod
    def install(engine: Engine) -> None:
        _METADATA.create_all(engine)

    def read(
        self, engine: Engine, sandbox: str, tool: str, args: dict[str, JsonValue]
    ) -> CallResult:
        """A call that cannot change the environment: served from the current copy."""
        with self._lock(sandbox):
            env, _ = self._current(engine, sandbox)
            return env.call(tool, args)

    def write(
        self, engine: Engine, sandbox: str, key: str, tool: str, args: dict[str, JsonValue]
    ) -> CallResult:
        """Apply a call once: its journal row and its idempotency key commit together."""
        for attempt in range(1, APPEND_ATTEMPTS + 1):
            with self._lock(sandbox):
                done = self.lookup(engine, key)
                if done is not None:
                    return done.result  # this key already ran, perhaps on another worker
                try:
                    result = self._append(engine, sandbox, key, tool, args)
                except IntegrityError:
                    if attempt == APPEND_ATTEMPTS:
                        raise
                    continue  # another worker appended first: look again, on its state
            self._maybe_crash()
            return result
        raise AssertionError("unreachable")

    def _append(
        self, engine: Engine, sandbox: str, key: str, tool: str, args: dict[str, JsonValue]
    ) -> CallResult:
        env, ordinal = self._current(engine, sandbox)
        try:
            result = env.call(tool, args)
            with engine.begin() as conn:
                _insert(conn, sandbox, ordinal + 1, key, tool, args, result)
        except BaseException:
            with self._guard:  # the copy may hold an effect that never committed
                self._cache.pop(sandbox, None)
            raise
        self._remember(sandbox, env, ordinal + 1)
        return result

    def lookup(self, engine: Engine, key: str) -> JournalEntry | None:
        with engine.connect() as conn:
            row = conn.execute(select(JOURNAL).where(JOURNAL.c.idempotency_key == key)).first()
        return None if row is None else _entry(row._mapping)

    def entries(self, engine: Engine, sandbox: str) -> list[JournalEntry]:
        with engine.connect() as conn:
            rows = conn.execute(
                select(JOURNAL).where(JOURNAL.c.sandbox == sandbox).order_by(JOURNAL.c.ordinal)
            ).all()
        return [_entry(r._mapping) for r in rows]

    def rebuild(self, engine: Engine, sandbox: str) -> SandboxEnvironment:
        """A fresh environment from the journal alone (what a new worker would see)."""
        env = self._open(sandbox)
        for entry in self.entries(engine, sandbox):
            env.call(entry.tool, entry.arguments)
        return env

    # ------------------------------------------------------------------ helpers
    def _lock(self, sandbox: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(sandbox, threading.Lock())

    def _current(self, engine: Engine, sandbox: str) -> tuple[SandboxEnvironment, int]:
        with engine.connect() as conn:
            length = conn.execute(
                select(func.count()).select_from(JOURNAL).where(JOURNAL.c.sandbox == sandbox)
            ).scalar_one()
        cached = self._cache.get(sandbox)
        if cached is not None and cached[1] == length:
            self._cache.move_to_end(sandbox)
            return cached
        env = self.rebuild(engine, sandbox)
        self._remember(sandbox, env, length)
        return env, length

    def _remember(self, sandbox: str, env: SandboxEnvironment, ordinal: int) -> None:
        with self._guard:
            self._cache[sandbox] = (env, ordinal)
            self._cache.move_to_end(sandbox)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _maybe_crash(self) -> None:
        limit = os.environ.get(CRASH_AFTER_WRITES_ENV)
        with self._guard:
            self._writes += 1
            crash = limit is not None and self._writes == int(limit)
        if crash:
            os.kill(os.getpid(), signal.SIGKILL)


def _insert(
    conn: Connection,
    sandbox: str,
    ordinal: int,
    key: str,
    tool: str,
    args: dict[str, JsonValue],
    result: CallResult,
) -> None:
    conn.execute(
        insert(JOURNAL).values(
            sandbox=sandbox,
            ordinal=ordinal,
            idempotency_key=key,
            tool=tool,
            arguments=args,
            status=result.status,
            output={"output": result.output, "error": result.error},
        )
    )


def _entry(row: object) -> JournalEntry:
    m = dict(row)  # type: ignore[call-overload]
    stored = m["output"]
    return JournalEntry(
        ordinal=m["ordinal"],
        idempotency_key=m["idempotency_key"],
        tool=m["tool"],
        arguments=m["arguments"],
        result=CallResult(status=m["status"], output=stored["output"], error=stored["error"]),
    )
