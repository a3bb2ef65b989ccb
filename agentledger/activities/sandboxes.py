"""Sandboxes: where a fork that is not dry runs its writes, a copy of its pack's system of
record made the first time the fork writes, never production records (its reads see
production as it is now).

On PostgreSQL a sandbox is a schema of the production database (``sbx_`` and a digest of the
fork's run id), reached by translating the pack's unqualified tables into it, so every worker
of a fleet sees the same copy; the copy is made once, under a transaction-scoped advisory lock,
and marked done in the same transaction. On SQLite (the embedded default, one machine) it is a
database file beside the ledger's. The pack makes the schema (its ``install``) and copies what
its writes read and change (its ``sandbox`` hook).

A fork's sandbox outlives the fork for a while, for a person to look at what it wrote; the
housekeeping schedule drops those of forks that ended longer ago than kept (``drop_ended``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Column, MetaData, String, Table, insert, select, text
from sqlalchemy.engine import Connection, Engine

from agentledger.activities.ledger import build_engine
from agentledger.activities.ports import Pack
from agentledger.domain.canonical import sha256_hex

_marker = MetaData()
copied = Table("agentledger_sandbox", _marker, Column("run_id", String, primary_key=True))
"""One row once the copy is made: a sandbox is copied once, whichever worker comes first."""


class NoSandbox(LookupError):
    """The pack has no sandbox hook: its forks run dry only."""


class Sandboxes:
    """The sandboxes of forks, over one production engine; each made once, then cached."""

    def __init__(self, production: Engine) -> None:
        self._production = production
        self._made: dict[str, Engine] = {}
        self._lock = threading.Lock()

    def engine(self, run_id: str, pack: Pack) -> Engine:
        """The sandbox of fork ``run_id``, copied from production the first time."""
        if pack.sandbox is None:
            raise NoSandbox(f"pack {pack.name} has no sandbox")
        with self._lock:
            if run_id not in self._made:
                self._made[run_id] = self._make(run_id, pack)
            return self._made[run_id]

    def _make(self, run_id: str, pack: Pack) -> Engine:
        name = "sbx_" + sha256_hex(run_id).removeprefix("sha256:")[:24]
        if self._production.dialect.name == "postgresql":
            with self._production.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{name}"'))
            sandbox: Engine = self._production.execution_options(schema_translate_map={None: name})
        else:
            sandbox = build_engine(f"sqlite:///{self._sqlite_dir() / name}.sqlite")
        pack.install(sandbox)
        with sandbox.execution_options(ledger_write=True).begin() as conn:  # SQLite: IMMEDIATE
            _copy_once(conn, run_id, pack, self._production)
        return sandbox

    def _sqlite_dir(self) -> Path:
        database = self._production.url.database
        if not database or database == ":memory:":
            raise NoSandbox("an in-memory system of record has no place for a sandbox file")
        folder = Path(database).with_suffix(".sandboxes")
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _copy_once(conn: Connection, run_id: str, pack: Pack, production: Engine) -> None:
    """Copy production into the sandbox unless the marker says it is done; on PostgreSQL
    serialised by an advisory lock, so two workers never copy twice."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": run_id})
    copied.create(conn, checkfirst=True)
    if conn.execute(select(copied.c.run_id)).first() is not None:
        return
    assert pack.sandbox is not None
    pack.sandbox(production, conn)
    conn.execute(insert(copied).values(run_id=run_id))


def drop_ended(production: Engine, ended: Callable[[str], bool]) -> int:
    """Drop every sandbox whose fork has ``ended`` (by its marker's run id); how many. A
    sandbox without a marker is still being copied (or its copy failed) and is left alone."""
    dropped = 0
    if production.dialect.name == "postgresql":
        for schema, run_id in _schemas(production):
            if run_id is not None and ended(run_id):
                with production.begin() as conn:
                    conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                dropped += 1
        return dropped
    for path, run_id in _files(production):
        if run_id is not None and ended(run_id):
            for part in (path, *path.parent.glob(f"{path.name}-*")):  # with its -wal, -shm
                part.unlink(missing_ok=True)
            dropped += 1
    return dropped


def _schemas(production: Engine) -> list[tuple[str, str | None]]:
    """Each sandbox schema and its fork's run id (read and let go before any is dropped)."""
    found: list[tuple[str, str | None]] = []
    with production.connect() as conn:
        like = text("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'sbx\\_%'")
        for name in list(conn.execute(like).scalars()):
            marker = f'"{name}".{copied.name}'
            if conn.execute(text("SELECT to_regclass(:t)"), {"t": marker}).scalar_one() is None:
                found.append((name, None))
                continue
            run_id = conn.execute(text(f"SELECT run_id FROM {marker}")).scalar_one_or_none()
            found.append((name, run_id))
    return found


def _files(production: Engine) -> list[tuple[Path, str | None]]:
    """Each sandbox file beside the SQLite ledger and its fork's run id."""
    database = production.url.database
    folder = Path(database).with_suffix(".sandboxes") if database else None
    if folder is None or not folder.is_dir():
        return []
    found: list[tuple[Path, str | None]] = []
    for path in sorted(folder.glob("sbx_*.sqlite")):
        engine = build_engine(f"sqlite:///{path}")
        try:
            with engine.connect() as conn:
                marked = engine.dialect.has_table(conn, copied.name)
                run_id = (
                    conn.execute(select(copied.c.run_id)).scalar_one_or_none() if marked else None
                )
        finally:
            engine.dispose()
        found.append((path, run_id))
    return found
