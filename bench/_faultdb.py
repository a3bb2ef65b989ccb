"""A scratch PostgreSQL database for one benchmark run, dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL, make_url

DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _conninfo(url: URL) -> str:
    return psycopg.conninfo.make_conninfo(
        host=url.host or "127.0.0.1",
        port=url.port or 5432,
        user=url.username,
        password=url.password,
        dbname=url.database or "postgres",
        connect_timeout=3,
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
        conn = psycopg.connect(_conninfo(admin), autocommit=True)
    except psycopg.Error as exc:
        if admin_url:
            raise
        print(f"· no PostgreSQL at {admin.render_as_string()} ({exc}); using SQLite")
        yield None
        return
    name = f"agentledger_faults_{uuid.uuid4().hex[:10]}"
    with conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_conninfo(admin), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
