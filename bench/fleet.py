"""Worker fleets: throughput with 1, 2 and 3 worker processes, and runs parked on approval.

    python -m bench.fleet [--workers 1,2,3] [--runs 60] [--parked 200] [--cache 1000]
                          [--database-url URL]

Throughput: for each fleet size, a fresh stack, that many ``agentledger worker`` processes on one
task queue, and ``--runs`` refund runs whose model takes 200 ms per call (I/O-bound, as real
providers are: ``bench._slow_pack``), each approved as soon as it asks; runs per second from the
first start to the last completion, with the ratio to one worker.

Parked: ``--parked N`` refund runs parked on approval under a 3-worker fleet with the product's
default run cache (``AGENTLEDGER_MAX_CACHED_RUNS``) unless ``--cache`` says otherwise, and the
image's ``MALLOC_ARENA_MAX=2`` (``infra/Dockerfile``; the environment's value wins): start
throughput (paced: never more than the fleet's caches, 3 × ``--cache``, ahead of the runs
parked), the server's and each worker's RSS while parked, then all approved: drain throughput
and exactly-once counts (refund rows per order). Orders come from ``bench.crash.fault_pack``
(200 late orders; beyond that they repeat, and a second approved refund of one order must be
refused, not paid).

Prints a table per mode, then one JSON line: runs, completed, duplicate_effects, workers,
parked, worker_rss_mb_parked, server_rss_mb_parked.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from agentledger.activities.ledger._tables import approvals as records_approvals
from agentledger.app import runs as client_ops
from agentledger.app.config import DEFAULT_MAX_CACHED_RUNS
from agentledger.app.devserver import DevServer, stop_dev_server
from agentledger.app.errors import AgentLedgerError
from agentledger.app.registry import get_pack, register_pack
from agentledger.packs.support import records
from bench import _slow_pack
from bench._faultdb import scratch_database
from bench._stack import Stack, open_stack, start_dev_server
from bench.crash import fault_pack

SLOW_PACK = f"{_slow_pack.NAME}=bench._slow_pack:PACK"


@asynccontextmanager
async def _stack(database_url: str | None) -> AsyncIterator[tuple[Stack, DevServer]]:
    """A fresh dev server and ledger (SQLite, or a scratch PostgreSQL database)."""
    with tempfile.TemporaryDirectory(prefix="agentledger-fleet-") as tmp:
        data_dir = Path(tmp)
        server = start_dev_server(data_dir / "temporal")
        try:
            with (
                scratch_database(make_url(database_url), "agentledger_fleet")
                if database_url
                else contextlib.nullcontext(f"sqlite:///{data_dir / 'ledger.db'}")
            ) as url:
                queue = f"fleet-{uuid.uuid4().hex[:8]}"
                stack = await open_stack(data_dir, server.address, url, queue)
                fault_pack.seed(stack.runtime.ledger.engine)
                yield stack, server
                stack.runtime.ledger.engine.dispose()
        finally:
            stop_dev_server(data_dir / "temporal")


def _workers(stack: Stack, n: int, cache: int) -> list[subprocess.Popen[bytes]]:
    s = stack.settings
    env = {
        **os.environ,
        "AGENTLEDGER_TEMPORAL_ADDRESS": s.address,
        "AGENTLEDGER_DATABASE_URL": s.ledger_url,
        "AGENTLEDGER_DATA_DIR": str(s.data_dir),
        "AGENTLEDGER_TASK_QUEUE": s.task_queue,
        "AGENTLEDGER_PACKS": SLOW_PACK,
        "AGENTLEDGER_MAX_CACHED_RUNS": str(cache),
        "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),  # as the image sets it
    }
    return [
        subprocess.Popen(
            [sys.executable, "-m", "agentledger.cli", "worker"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(n)
    ]


async def _polling(stack: Stack, n: int) -> None:
    request = DescribeTaskQueueRequest(
        namespace=stack.client.namespace,
        task_queue=TaskQueue(name=stack.settings.task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    for _ in range(1200):
        described = await stack.client.workflow_service.describe_task_queue(request)
        if len({p.identity for p in described.pollers}) >= n:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{n} workers never polled")


async def _start(stack: Stack, i: int, pack: str) -> str:
    principal = stack.principal("usr_73")
    order_id = fault_pack.crash_order(i % fault_pack.ORDERS)
    order = get_pack(pack).make_work_order(fault_pack.request_for(order_id), principal)
    return (
        await client_ops.start_run(
            stack.client, stack.settings.task_queue, order, issuer=stack.issuer
        )
    ).id


def _parked(stack: Stack) -> int:
    """Runs waiting for an approval."""
    with stack.runtime.ledger.engine.connect() as db:
        query = select(func.count()).where(records_approvals.c.status == "pending")
        return int(db.execute(query).scalar_one())


async def _start_paced(stack: Stack, n: int, ahead: int) -> list[str]:
    """Start ``n`` refund runs, never more than ``ahead`` beyond those parked. Past the fleet's
    sticky caches every task of a run still on its way would be a replay of its history, so an
    unpaced start storm measures cache thrashing, not what parked runs cost."""
    ids: list[str] = []
    parked = 0
    for i in range(n):
        while i - parked >= ahead:
            await asyncio.sleep(0.2)
            parked = _parked(stack)
        ids.append(await _start(stack, i, "support"))
    return ids


async def _approve_when_asked(stack: Stack, run_id: str) -> None:
    for _ in range(6000):
        rows = stack.runtime.ledger.approvals(status="pending", run_id=run_id)
        if rows:
            with contextlib.suppress(AgentLedgerError):  # decided already: refused, recorded
                await client_ops.decide(
                    stack.client,
                    run_id,
                    rows[0].approval_id,
                    "ops_lead_1",
                    issuer=stack.issuer,
                    approve=True,
                    digest=rows[0].proposal_digest,
                )
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{run_id} never asked for approval")


async def _finish(stack: Stack, run_ids: list[str], at_once: int = 50) -> int:
    gate = asyncio.Semaphore(at_once)

    async def one(run_id: str) -> str:
        async with gate:
            await _approve_when_asked(stack, run_id)
            await stack.client.get_workflow_handle(run_id).result()
            return stack.runtime.ledger.read(run_id)[-1].kind

    return sum(kind == "run_completed" for kind in await asyncio.gather(*map(one, run_ids)))


def _duplicate_effects(stack: Stack) -> int:
    with stack.runtime.ledger.engine.connect() as db:
        per_order = db.execute(
            select(func.count()).select_from(records.refunds).group_by(records.refunds.c.order_id)
        ).scalars()
        return sum(n - 1 for n in per_order if n > 1)


def _rss_mb(pid: int | None) -> float:
    if pid is None:
        return 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=60)


async def throughput(workers: int, runs: int, database_url: str | None) -> dict[str, float]:
    async with _stack(database_url) as (stack, _server):
        procs = _workers(stack, workers, cache=1000)
        try:
            await _polling(stack, workers)
            started = time.perf_counter()
            ids = [await _start(stack, i, _slow_pack.NAME) for i in range(runs)]
            completed = await _finish(stack, ids)
            seconds = time.perf_counter() - started
        finally:
            _stop(procs)
        return {
            "workers": workers,
            "runs": runs,
            "completed": completed,
            "seconds": round(seconds, 1),
            "runs_per_s": round(runs / seconds, 2),
            "duplicate_effects": _duplicate_effects(stack),
        }


async def parked(
    n: int, database_url: str | None, cache: int = DEFAULT_MAX_CACHED_RUNS
) -> dict[str, object]:
    async with _stack(database_url) as (stack, server):
        procs = _workers(stack, 3, cache=cache)
        try:
            await _polling(stack, 3)
            started = time.perf_counter()
            ids = await _start_paced(stack, n, ahead=3 * cache)
            started_per_s = n / (time.perf_counter() - started)
            while _parked(stack) < n:
                await asyncio.sleep(1)
            parked_s = time.perf_counter() - started
            await asyncio.sleep(2)
            worker_rss = [_rss_mb(p.pid) for p in procs]
            server_rss = _rss_mb(server.pid)
            drain = time.perf_counter()
            completed = await _finish(stack, ids)
            drain_s = time.perf_counter() - drain
        finally:
            _stop(procs)
        return {
            "parked": n,
            "starts_per_s": round(started_per_s, 1),
            "park_seconds": round(parked_s, 1),
            "worker_rss_mb_parked": round(max(worker_rss), 1),
            "worker_rss_mb_each": [round(r, 1) for r in worker_rss],
            "server_rss_mb_parked": round(server_rss, 1),
            "drained_per_s": round(n / drain_s, 2),
            "completed": completed,
            "duplicate_effects": _duplicate_effects(stack),
        }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--parked", type=int, default=0, help="also park N runs (0: skip)")
    parser.add_argument(
        "--cache",
        type=int,
        default=DEFAULT_MAX_CACHED_RUNS,
        help="sticky cache of parked workers (default: the product's)",
    )
    parser.add_argument("--database-url", help="PostgreSQL admin URL (default: SQLite)")
    args = parser.parse_args()
    register_pack(_slow_pack.NAME, SLOW_PACK.split("=", 1)[1])
    rows = [await throughput(int(n), args.runs, args.database_url) for n in args.workers.split(",")]
    base = rows[0]["runs_per_s"]
    print(f"{'workers':>7} {'runs':>5} {'done':>5} {'s':>7} {'runs/s':>7} {'×1':>5} {'dup':>4}")
    for r in rows:
        print(
            f"{r['workers']:>7} {r['runs']:>5} {r['completed']:>5} {r['seconds']:>7} "
            f"{r['runs_per_s']:>7} {r['runs_per_s'] / base:>5.2f} {r['duplicate_effects']:>4}"
        )
    duplicates = sum(int(r["duplicate_effects"]) for r in rows)
    summary: dict[str, object] = {
        "runs": sum(int(r["runs"]) for r in rows),
        "completed": sum(int(r["completed"]) for r in rows),
        "workers": {int(r["workers"]): r["runs_per_s"] for r in rows},
    }
    if args.parked:
        held = await parked(args.parked, args.database_url, args.cache)
        print(json.dumps(held))
        duplicates += int(str(held["duplicate_effects"]))
        summary |= {k: held[k] for k in ("parked", "worker_rss_mb_parked", "server_rss_mb_parked")}
    print(json.dumps({**summary, "duplicate_effects": duplicates}))


if __name__ == "__main__":
    asyncio.run(main())
