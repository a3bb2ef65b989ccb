"""Scratch PostgreSQL databases, dropped afterwards: one per benchmark run, one per test (the
test suite's ``postgres_database`` fixture uses ``scratch_database`` too)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL, make_url

DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def conninfo(url: URL) -> str:
    """libpq's connection string for a SQLAlchemy ``url``."""
    return psycopg.conninfo.make_conninfo(
        host=url.host or "127.0.0.1",
        port=url.port or 5432,
        user=url.username,
        password=url.password,
        dbname=url.database or "postgres",
        connect_timeout=3,
    )


@contextmanager
def scratch_database(admin: URL, prefix: str) -> Iterator[str]:
    """A fresh, empty database on ``admin``'s server, dropped (even with open connections) after."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(conninfo(admin), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo(admin), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextmanager
def postgres_database(admin_url: str | None) -> Iterator[str | None]:
    """A fresh database on ``admin_url`` (default: the local server); None for SQLite, or when
    no PostgreSQL answers and none was asked for."""
    if admin_url == "sqlite":
        yield None
        return
    admin = make_url(admin_url or DEFAULT_ADMIN_URL)
    try:
        psycopg.connect(conninfo(admin), autocommit=True).close()
    except psycopg.Error as exc:
        if admin_url:
            raise
        print(f"· no PostgreSQL at {admin.render_as_string()} ({exc}); using SQLite")
        yield None
        return
    with scratch_database(admin, "agentledger_faults") as url:
        yield url
