"""Engines for the two supported backends, and the translation of connectivity errors.

SQLite gets WAL (readers never block the writer), a busy timeout, foreign keys and real
transactions: SQLAlchemy emits ``BEGIN`` itself because the sqlite3 driver's legacy mode skips it
for reads and DDL. Writers begin ``IMMEDIATE`` so two appenders queue on the busy timeout instead
of one failing when it upgrades a read lock. PostgreSQL gets a pinged pool and a connect timeout,
so an unreachable server fails fast with ``LedgerUnavailable`` rather than hanging an activity.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.pool import StaticPool

from agentledger.activities.ledger._codec import dumps, dumps_str, loads
from agentledger.activities.ledger._errors import LedgerUnavailable

SQLITE_BUSY_TIMEOUT_MS = 15_000
POSTGRES_CONNECT_TIMEOUT_S = 5
_SYNCHRONOUS = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})


def build_engine(url: str | URL, *, sqlite_synchronous: str = "FULL", echo: bool = False) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if sqlite_synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"sqlite_synchronous must be one of {sorted(_SYNCHRONOUS)}")
        return _sqlite_engine(parsed, sqlite_synchronous.upper(), echo)
    if parsed.get_backend_name() == "postgresql":
        return _postgres_engine(parsed, echo)
    raise ValueError(f"unsupported ledger database {redact(parsed)}; use sqlite or postgresql")


def _sqlite_engine(url: URL, synchronous: str, echo: bool) -> Engine:
    in_memory = url.database in (None, "", ":memory:")
    engine = create_engine(
        url,
        echo=echo,
        json_serializer=dumps_str,
        json_deserializer=loads,
        # An in-memory database exists per connection: share one, for single-threaded tests only.
        poolclass=StaticPool if in_memory else None,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN, see the module docstring
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute(f"PRAGMA synchronous = {synchronous}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get("ledger_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _postgres_engine(url: URL, echo: bool) -> Engine:
    return create_engine(
        url,
        echo=echo,
        json_serializer=dumps,
        json_deserializer=loads,
        pool_pre_ping=True,
        pool_size=5,
        max_overflow=10,
        connect_args={
            "connect_timeout": POSTGRES_CONNECT_TIMEOUT_S,
            "application_name": "agentledger",
        },
    )


def redact(url: str | URL) -> str:
    """The URL as it may appear in logs and errors: never with its password."""
    return make_url(url).render_as_string(hide_password=True)


@contextmanager
def translate_unavailable(url: str | URL) -> Iterator[None]:
    """Turn "cannot reach / database busy" into ``LedgerUnavailable``; leave bugs alone."""
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise LedgerUnavailable(
            f"ledger database {redact(url)} unavailable: {_first_line(exc)}"
        ) from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise LedgerUnavailable(
                f"ledger database {redact(url)} dropped the connection: {_first_line(exc)}"
            ) from exc
        raise


def _first_line(exc: DBAPIError) -> str:
    text = str(exc.orig) if exc.orig is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc.orig).__name__
