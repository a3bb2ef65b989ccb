"""Sandboxes: where a fork that is not dry runs its writes, a copy of its pack's system of
record made the first time the fork writes, never production records (its reads see
production as it is now).

On PostgreSQL a sandbox is a schema of the production database (``sbx_`` and a digest of the
fork's run id), reached by translating the pack's unqualified tables into it, so every worker
of a fleet sees the same copy; the copy is made once, under a transaction-scoped advisory lock,
and marked done in the same transaction. On SQLite (the embedded default, one machine) it is a
database file beside the ledger's. The pack makes the schema (its ``install``) and copies what
its writes read and change (its ``sandbox`` hook).
"""

from __future__ import annotations

import threading
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
