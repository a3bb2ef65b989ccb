"""Backup and restore of the ledger (``agentledger backup PATH``, ``agentledger restore PATH``).

SQLite is copied with its online backup API (a consistent copy while workers append);
PostgreSQL with ``pg_dump --format=custom`` and ``pg_restore`` (Debian's ``postgresql-client``).
A backup never overwrites a file, and a restore goes only into a database that holds no ledger
(an existing one is refused, never merged); a file that is not a ledger backup of the target's
kind is refused before anything is written. After a restore the ledger is migrated to this
code's schema and its read models are rebuilt from the log (``Ledger.rebuild_read_models``).

What a backup holds: the ledger's tables (the event log, manifests, packets, read models, the
directory, memory, documents, the subject keys wrapped under the ring). Not the keys that open
them: the payload key ring and the issuer's key stay in ``<data dir>/identity`` (or where
``AGENTLEDGER_PAYLOAD_KEYS`` points). A backup without its ring cannot open a sealed event, by
design (events, packets, tool outputs and answer streams are sealed per subject); the read
models (request text, answers) and memories are in clear, so keep a backup as you keep the
database. A backup taken before an erasure still holds the erased subject's wrapped key, and the
ring still opens it: so a restore erases again what the erasure register
(``app.erasure_register``, kept outside the ledger like the ring) says was erased, before
anything reads the restored ledger.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import URL, make_url

from agentledger.activities.ledger import Ledger, Sealer, build_engine
from agentledger.app import erasure_register
from agentledger.app.errors import ConfigError, Refused

__all__ = ["BackedUp", "Restored", "backup", "restore"]


@dataclass(frozen=True)
class BackedUp:
    path: Path
    runs: int
    events: int


_COUNTS = "SELECT count(DISTINCT run_id), count(*) FROM run_events"


@dataclass(frozen=True)
class Restored:
    run_ids: tuple[str, ...]
    events: int
    erased_again: tuple[str, ...] = ()
    """The erasures made to re-apply the register's (``app.erasure_register.reapply``)."""


def backup(ledger_url: str, path: Path) -> BackedUp:
    """Copy the ledger at ``ledger_url`` to a new file ``path``."""
    if path.exists():
        raise Refused(f"{path} exists: a backup never overwrites a file", "backup_exists")
    url = make_url(ledger_url)
    if url.get_backend_name() == "sqlite":
        with closing(_sqlite(url)) as source, closing(sqlite3.connect(path)) as target:
            source.backup(target)
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as copy:
            runs, events = copy.execute(_COUNTS).fetchone()  # what the copy holds
        return BackedUp(path, int(runs), int(events))
    return _pg_dump(ledger_url, url, path)


def _pg_dump(ledger_url: str, url: URL, path: Path) -> BackedUp:
    """``pg_dump`` of one exported snapshot, counted in that same snapshot: the figures say
    exactly what the archive holds, however many appends land meanwhile."""
    with Ledger.open(ledger_url, migrate=False) as ledger:
        repeatable = ledger.engine.execution_options(isolation_level="REPEATABLE READ")
        with repeatable.connect() as conn, conn.begin():
            snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            runs, events = conn.execute(text(_COUNTS)).one()
            _pg("pg_dump", url, "--format=custom", "--no-owner", f"--snapshot={snapshot}",
                f"--file={path}")  # fmt: skip
    return BackedUp(path, int(runs), int(events))


def restore(
    ledger_url: str,
    path: Path,
    sealer: Sealer | None = None,
    register: Sequence[erasure_register.Entry] = (),
) -> Restored:
    """Restore the backup ``path`` into the empty database at ``ledger_url``; migrate it,
    rebuild its read models (``sealer``: the key ring that opens its sealed runs) and erase
    again what the erasure ``register`` says was erased since."""
    url = make_url(ledger_url)
    if not path.is_file():
        raise ConfigError(f"no backup file {path}")
    _refuse_a_ledger_there(ledger_url)
    if url.get_backend_name() == "sqlite":
        _check_sqlite_backup(path)
        with closing(sqlite3.connect(path)) as source, closing(_sqlite(url)) as target:
            source.backup(target)
    else:
        listed = _pg("pg_restore", None, "--list", str(path), check=False)
        if listed.returncode != 0:
            raise ConfigError(f"{path} is not a pg_dump archive: {listed.stderr.strip()}")
        _pg("pg_restore", url, "--no-owner", "--exit-on-error", str(path))
    with Ledger.open(ledger_url) as ledger:
        ledger.seal_with(sealer)
        replayed = ledger.rebuild_read_models()
        erased_again = tuple(erasure_register.reapply(ledger, list(register)))
        with ledger.engine.connect() as conn:
            query = text("SELECT DISTINCT run_id FROM run_events ORDER BY run_id")
            run_ids = tuple(conn.execute(query).scalars())
    return Restored(run_ids, replayed, erased_again)


def _refuse_a_ledger_there(ledger_url: str) -> None:
    """``Refused`` when the target already has a ledger's tables (a restore never merges)."""
    url = make_url(ledger_url)
    if url.get_backend_name() == "sqlite" and not Path(url.database or "").exists():
        return
    engine = build_engine(ledger_url)
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    if tables & {"run_events", "alembic_version"}:
        raise Refused(
            f"{url.render_as_string(hide_password=True)} already holds a ledger: restore into "
            "a new, empty database",
            "restore_target_not_empty",
        )


def _check_sqlite_backup(path: Path) -> None:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            (verdict,) = db.execute("PRAGMA integrity_check").fetchone()
            db.execute("SELECT count(*) FROM run_events").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path} is not a ledger backup: {exc}") from None
    if verdict != "ok":
        raise ConfigError(f"{path} is damaged: {verdict}")


def _sqlite(url: URL) -> sqlite3.Connection:
    database = url.database or ""
    Path(database).parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(database)


def _pg(
    tool: str, url: URL | None, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL client tool against ``url`` (its password passed in the environment)."""
    if shutil.which(tool) is None:
        raise ConfigError(f"{tool} is missing: install Debian's postgresql-client")
    env = dict(os.environ)
    target: list[str] = []
    if url is not None:
        if url.password:
            env["PGPASSWORD"] = str(url.password)
        libpq = url.set(drivername="postgresql", password=None)
        target = [f"--dbname={libpq.render_as_string(hide_password=False)}"]
    done = subprocess.run([tool, *target, *args], env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise ConfigError(f"{tool} failed: {done.stderr.strip()[:500]}")
    return done
