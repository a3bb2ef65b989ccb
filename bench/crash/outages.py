"""Infrastructure faults for the crash tests and bench.faults: a Temporal server that dies and
comes back, a database that refuses every connection for a while."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy.engine import URL

from agentledger.app.devserver import DevServer, ensure_dev_server, port_open

__all__ = ["crash_and_restart_server", "database_outage"]


async def crash_and_restart_server(
    server: DevServer, data_dir: Path, down_for: float = 1.0
) -> DevServer:
    """SIGKILL the dev server (no clean shutdown), then start it on the same port and data."""
    assert server.pid is not None
    os.killpg(server.pid, signal.SIGKILL)
    host, port = server.address.rsplit(":", 1)
    while port_open(host, int(port)):  # else the restart would "reuse" the dying server
        await asyncio.sleep(0.05)
    await asyncio.sleep(down_for)
    return ensure_dev_server(data_dir, port=int(port), ui_port=None)


@contextmanager
def database_outage(admin: URL, database: str) -> Iterator[None]:
    """PostgreSQL refuses every connection to ``database`` (superusers too) and drops the open
    ones, until the block ends: what a failover or a crashed primary looks like to a client."""
    conninfo = psycopg.conninfo.make_conninfo(
        host=admin.host or "127.0.0.1",
        port=admin.port or 5432,
        user=admin.username,
        password=admin.password,
        dbname=admin.database or "postgres",
    )
    name = sql.Identifier(database)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(name))
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        )
    try:
        yield
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(name))
