"""Would async database I/O make an activity cheaper? Issue 38's item 3, measured.

agentledger's activities are synchronous: the Temporal worker hands each to a thread pool (one
hop per activity) and it talks to the ledger with SQLAlchemy on psycopg 3 or sqlite3. The
alternative is an ``async def`` activity on the event loop over SQLAlchemy's asyncio extension
(``aiosqlite``, psycopg 3's async connection). Both sides here run the same database work an
activity does per step: an append transaction (``BEGIN IMMEDIATE`` on SQLite; the run's head
read, three event rows inserted, its read-model row upserted, commit) and a read transaction
(the run's last events), ``--activities`` times, with ``--concurrency`` of them in flight at
once (each on a run of its own, as parallel runs are), on each backend:

- ``sync``: each activity a plain function run by ``loop.run_in_executor`` on a thread pool,
  as the worker dispatches agentledger's activities;
- ``async``: each activity a coroutine awaited on the loop.

    python -m bench.async_io [--activities 2000] [--concurrency 1,8] [--backend sqlite,postgresql]

Per activity: wall microseconds and this process's CPU microseconds (``time.process_time``:
every thread, aiosqlite's own included), sync and async side by side, with their ratios. The
thread hop alone (a no-op through the pool) is printed beside them. SQLite runs with the
ledger's own settings (WAL, ``synchronous=FULL``). The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    event,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agentledger.activities.ledger import build_engine
from bench.ledger import postgres_url

_metadata = MetaData()
events = Table(
    "events",
    _metadata,
    Column("run_id", String, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("body", Text, nullable=False),
)
runs = Table(
    "runs",
    _metadata,
    Column("run_id", String, primary_key=True),
    Column("last_seq", Integer, nullable=False),
    Column("status", String, nullable=False),
)
BODY = '{"kind":"step_completed","text":"' + "x" * 600 + '"}'


@lru_cache(maxsize=2)
def _statements(dialect: str) -> tuple[Any, Any, Any]:
    """The append's head read and read-model upsert, and the read: built once, as the ledger's
    are (``_store``, ``_readmodel_writes``)."""
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    upsert = insert(runs)
    upsert = upsert.on_conflict_do_update(
        index_elements=["run_id"], set_={"last_seq": upsert.excluded.last_seq}
    )
    run = bindparam("run_id", type_=String())
    head = select(func.coalesce(func.max(events.c.seq), 0)).where(events.c.run_id == run)
    read = select(events.c.seq, events.c.body).where(events.c.run_id == run)
    return head, upsert, read.order_by(events.c.seq.desc()).limit(5)


def _rows(run_id: str, seq: int) -> list[dict[str, Any]]:
    return [{"run_id": run_id, "seq": seq + i, "body": BODY} for i in (1, 2, 3)]


def sync_activity(engine: Engine, writer: Engine, run_id: str) -> None:
    head, upsert, read = _statements(engine.dialect.name)
    with writer.begin() as conn:
        seq = conn.scalar(head, {"run_id": run_id}) or 0
        conn.execute(events.insert(), _rows(run_id, seq))
        conn.execute(upsert, {"run_id": run_id, "last_seq": seq + 3, "status": "running"})
    with engine.connect() as conn:
        conn.execute(read, {"run_id": run_id}).all()


async def async_activity(engine: AsyncEngine, writer: AsyncEngine, run_id: str) -> None:
    head, upsert, read = _statements(engine.dialect.name)
    async with writer.begin() as conn:
        seq = await conn.scalar(head, {"run_id": run_id}) or 0
        await conn.execute(events.insert(), _rows(run_id, seq))
        await conn.execute(upsert, {"run_id": run_id, "last_seq": seq + 3, "status": "running"})
    async with engine.connect() as conn:
        (await conn.execute(read, {"run_id": run_id})).all()


def _sqlite_async(url: str) -> AsyncEngine:
    """aiosqlite with the ledger's connection settings and its explicit ``BEGIN [IMMEDIATE]``
    (as SQLAlchemy's aiosqlite notes show)."""
    engine = create_async_engine(url.replace("sqlite://", "sqlite+aiosqlite://"))

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        for pragma in ("busy_timeout = 30000", "journal_mode = WAL", "synchronous = FULL"):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("ledger_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


async def _timed(
    activity: Callable[[str], Awaitable[None]], activities: int, concurrency: int, side: str
) -> tuple[float, float]:
    """Wall and CPU microseconds per activity, ``concurrency`` runs each doing their share."""

    async def one_run(k: int) -> None:
        for _ in range(activities // concurrency):
            await activity(f"{side}-{concurrency}-{k}")

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one_run(k) for k in range(concurrency)))
    done = (activities // concurrency) * concurrency
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall * 1e6 / done, cpu * 1e6 / done


async def _backend(url: str, activities: int, concurrency: int) -> dict[str, float]:
    sync = build_engine(url)
    _metadata.create_all(sync)
    sync_writer = sync.execution_options(ledger_write=True)
    pool = ThreadPoolExecutor(max_workers=max(concurrency, 4))
    loop = asyncio.get_running_loop()
    if sync.dialect.name == "sqlite":
        aengine = _sqlite_async(url)
    else:
        aengine = create_async_engine(url, pool_size=5, max_overflow=10)
    awriter = aengine.execution_options(ledger_write=True)

    async def in_pool(run_id: str) -> None:
        await loop.run_in_executor(pool, sync_activity, sync, sync_writer, run_id)

    async def on_loop(run_id: str) -> None:
        await async_activity(aengine, awriter, run_id)

    figures: dict[str, float] = {}
    for side, activity in (("sync", in_pool), ("async", on_loop)) * 2:  # warm, then timed
        wall, cpu = await _timed(activity, activities, concurrency, side)
        figures |= {f"{side}_us": round(wall, 1), f"{side}_cpu_us": round(cpu, 1)}
    figures["hop_cpu_us"] = round(await _hop_cpu_us(pool), 2)
    await aengine.dispose()
    sync.dispose()
    pool.shutdown()
    return figures


async def _hop_cpu_us(pool: ThreadPoolExecutor, calls: int = 5000) -> float:
    """CPU microseconds of one trip through the pool and back, for a function doing nothing."""
    loop = asyncio.get_running_loop()
    cpu = time.process_time()
    for _ in range(calls):
        await loop.run_in_executor(pool, _nothing)
    return (time.process_time() - cpu) * 1e6 / calls


def _nothing() -> None:
    return None


@contextmanager
def _url(backend: str) -> Iterator[str]:
    if backend == "postgresql":
        with postgres_url() as url:
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="agentledger-async-io-") as tmp:
        yield f"sqlite:///{Path(tmp) / 'ledger.db'}"


async def measure(backends: list[str], activities: int, levels: list[int]) -> dict[str, Any]:
    result: dict[str, Any] = {"activities": activities, "concurrency": levels}
    for backend in backends:
        for concurrency in levels:
            with ExitStack() as stack:
                url = stack.enter_context(_url(backend))
                figures = await _backend(url, activities, concurrency)
            _print_row(backend, concurrency, figures)
            tag = f"{backend}_c{concurrency}"
            result |= {f"{tag}_{k}": v for k, v in figures.items()}
            result[f"{tag}_async_vs_sync"] = round(figures["async_us"] / figures["sync_us"], 3)
            cpu_ratio = figures["async_cpu_us"] / figures["sync_cpu_us"]
            result[f"{tag}_async_cpu_vs_sync"] = round(cpu_ratio, 3)
    return result


def _print_row(backend: str, concurrency: int, f: dict[str, float]) -> None:
    print(
        f"{backend:<11}{concurrency:>4}  wall µs sync {f['sync_us']:>8.1f} async "
        f"{f['async_us']:>8.1f} ({f['async_us'] / f['sync_us']:.2f})   CPU µs sync "
        f"{f['sync_cpu_us']:>8.1f} async {f['async_cpu_us']:>8.1f} "
        f"({f['async_cpu_us'] / f['sync_cpu_us']:.2f})   pool hop CPU µs {f['hop_cpu_us']:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--activities", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--backend", default="sqlite,postgresql")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    result = asyncio.run(measure(args.backend.split(","), args.activities, levels))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
