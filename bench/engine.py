"""Step-loop cost vs the bare Temporal floor, side by side on one embedded stack.

(a) floor: a bare workflow running, per step, the same two no-op activities an agentledger step
needs for its external calls (model + tool), as ``async def`` activities on the event loop; (b)
the sync floor: the same with synchronous activities dispatched to a thread pool, as
agentledger's activities are (``Runtime._worker``: ``ThreadPoolExecutor``), the like-for-like
floor; (c) agentledger's real step loop with a scripted model and a no-op tool, including
context build, governance and ledger appends. All three workers poll for the whole
measurement and the three sides take turns, one run each per round (the order rotating every
round), so a change in the machine's load falls on all of them alike.

    python -m bench.engine [--runs 5] [--load]

Besides wall-clock milliseconds per step, each side reports the CPU time (user + sys, from
``time.process_time``) this process spent per step: the worker, its workflows and activities,
the SQLite ledger and the client, but not the Temporal server (a separate process). The floor
mostly waits on the server; agentledger's step also spends CPU of its own (context build,
validation, serialisation), and on a busy host that CPU is what multiplies, so the CPU ratio is
the figure that survives a shared machine. ``--load`` starts one busy-looping process pinned to
the last CPU this process may use (stopped afterwards), to show the step with that core
saturated. Wall-clock figures on a shared machine are noisy: compare ratios from one run. The
last line's ``*_vs_floor`` keys compare with the async floor (as they always have), the
``*_vs_sync_floor`` keys with the sync one; ``loadavg_1m`` is the host's load before and after.

The sandbox re-imports the floor's workflow module for every run (agentledger's workflows are
passed through, ``app.runtime.PASSTHROUGH``). A deployed worker reads it as bytecode (``pip
install`` compiles it); a source checkout run with ``PYTHONDONTWRITEBYTECODE`` would recompile
it from source each run, so the bench writes bytecode to a temporary prefix outside the tree
(``cached_bytecode``).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    # The sandbox re-imports this module for the floor workflows; the application root (httpx,
    # the ledger) and the hog's subprocess are only used outside it.
    from agentledger.app.runtime import Runtime, workflow_runner
    from bench._cpu import Sample, cpu_hog
    from bench._stack import embedded_stack

STEPS = 20
SIDES = ("floor", "sync_floor", "agentledger")
THREADS = 64
"""The sync floor's pool: ``Runtime.worker``'s default concurrency, as agentledger's has."""


@activity.defn
async def noop_activity(i: int) -> int:
    return i


@activity.defn
def noop_activity_sync(i: int) -> int:
    return i


async def _steps(act: Callable[[int], Any], steps: int) -> int:
    for i in range(steps):
        for _ in range(2):  # model call + tool call
            await workflow.execute_activity(act, i, start_to_close_timeout=timedelta(seconds=10))
    return steps


@workflow.defn
class FloorWorkflow:
    @workflow.run
    async def run(self, steps: int) -> int:
        return await _steps(noop_activity, steps)


@workflow.defn
class SyncFloorWorkflow:
    @workflow.run
    async def run(self, steps: int) -> int:
        return await _steps(noop_activity_sync, steps)


@asynccontextmanager
async def floor_worker(client: Client, sync: bool = False) -> AsyncIterator[str]:
    """A worker for the async or the sync floor, polling a queue of its own (yielded)."""
    queue = f"floor-{'sync' if sync else 'async'}-{uuid.uuid4().hex[:6]}"
    threads: dict[str, Any] = {}
    if sync:
        pool = ThreadPoolExecutor(max_workers=THREADS)
        threads = {"activity_executor": pool, "max_concurrent_activities": THREADS}
    async with Worker(
        client,
        task_queue=queue,
        workflows=[SyncFloorWorkflow if sync else FloorWorkflow],
        activities=[noop_activity_sync if sync else noop_activity],
        # Same sandbox settings as agentledger's worker, so neither side pays module re-imports.
        workflow_runner=workflow_runner("bench"),
        **threads,
    ):
        yield queue


async def _floor_run(client: Client, queue: str, sync: bool) -> tuple[float, float]:
    sample = Sample(STEPS)
    flow = SyncFloorWorkflow.run if sync else FloorWorkflow.run
    await client.execute_workflow(flow, STEPS, id=f"floor-{uuid.uuid4()}", task_queue=queue)
    return sample.per_step()


async def _floor(client: Client, runs: int, sync: bool = False) -> list[tuple[float, float]]:
    """One floor's (wall, CPU) ms per step of each run, on a worker of its own."""
    async with floor_worker(client, sync) as queue:
        timings = [await _floor_run(client, queue, sync) for _ in range(runs + 1)]
    return timings[1:]  # the first run warms caches and connections


async def _agentledger_run(stack: Any) -> tuple[float, float]:
    from agentledger.app import runs as client_ops
    from bench import _noop_pack

    order = _noop_pack.PACK.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
    sample = Sample(STEPS)
    handle = await client_ops.start_run(
        stack.client, stack.settings.task_queue, order, issuer=stack.issuer
    )
    result = await handle.result()
    assert result.status == "completed", result
    # STEPS tool steps plus the closing proceed/answer steps: charge per tool step.
    return sample.per_step()


async def _agentledger(stack: Any, runs: int) -> list[float]:
    """Wall-clock ms per step of each run (bench.observe and bench._tracing_cost use this)."""
    return [wall for wall, _ in await _agentledger_samples(stack, runs)]


async def _agentledger_samples(stack: Any, runs: int) -> list[tuple[float, float]]:
    runtime: Runtime = stack.runtime
    async with runtime.worker(stack.client):
        timings = [await _agentledger_run(stack) for _ in range(runs + 1)]
    return timings[1:]


async def alternating(stack: Any, runs: int) -> dict[str, list[tuple[float, float]]]:
    """Every side's (wall, CPU) ms per step, its runs taken in turns with the others' (a first
    round warms caches and connections and is left out)."""
    client: Client = stack.client
    async with AsyncExitStack() as workers:
        queue = await workers.enter_async_context(floor_worker(client))
        sync_queue = await workers.enter_async_context(floor_worker(client, sync=True))
        await workers.enter_async_context(stack.runtime.worker(client))
        side: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
            "floor": lambda: _floor_run(client, queue, False),
            "sync_floor": lambda: _floor_run(client, sync_queue, True),
            "agentledger": lambda: _agentledger_run(stack),
        }
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in SIDES}
        for round_ in range(runs + 1):
            turn = round_ % len(SIDES)
            for name in SIDES[turn:] + SIDES[:turn]:
                sample = await side[name]()
                if round_:
                    samples[name].append(sample)
    return samples


def cached_bytecode() -> None:
    """Let the sandbox's per-run re-imports read bytecode, as a deployed worker's do: when this
    process may not write any, compiled modules go to a temporary prefix, removed at exit."""
    if not sys.dont_write_bytecode:
        return
    prefix = tempfile.mkdtemp(prefix="bench-pycache-")
    atexit.register(shutil.rmtree, prefix, ignore_errors=True)
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False


def _median(samples: list[tuple[float, float]], i: int) -> float:
    return statistics.median(s[i] for s in samples)


def summary(samples: dict[str, list[tuple[float, float]]]) -> dict[str, float]:
    """The last line's figures: medians per side and agentledger's ratios to both floors."""
    wall = {name: _median(samples[name], 0) for name in SIDES}
    cpu = {name: _median(samples[name], 1) for name in SIDES}
    return {
        "floor_ms_per_step": round(wall["floor"], 2),
        "step_ms": round(wall["agentledger"], 2),
        "step_vs_floor": round(wall["agentledger"] / wall["floor"], 3),
        "floor_cpu_ms_per_step": round(cpu["floor"], 2),
        "step_cpu_ms": round(cpu["agentledger"], 2),
        "step_cpu_vs_floor": round(cpu["agentledger"] / cpu["floor"], 3),
        "sync_floor_ms_per_step": round(wall["sync_floor"], 2),
        "sync_floor_cpu_ms_per_step": round(cpu["sync_floor"], 2),
        "step_vs_sync_floor": round(wall["agentledger"] / wall["sync_floor"], 3),
        "step_cpu_vs_sync_floor": round(cpu["agentledger"] / cpu["sync_floor"], 3),
    }


def _table(figures: dict[str, float], runs: int, load: bool) -> None:
    f = figures
    rows = [
        ("floor (2 async no-ops)", f["floor_ms_per_step"], f["floor_cpu_ms_per_step"]),
        ("sync floor (thread pool)", f["sync_floor_ms_per_step"], f["sync_floor_cpu_ms_per_step"]),
        ("agentledger step", f["step_ms"], f["step_cpu_ms"]),
        ("agentledger / floor", f["step_vs_floor"], f["step_cpu_vs_floor"]),
        ("agentledger / sync floor", f["step_vs_sync_floor"], f["step_cpu_vs_sync_floor"]),
    ]
    print(f"medians of {runs} alternating rounds, {'with' if load else 'without'} a CPU hog")
    print(f"{'':26}{'wall ms/step':>14}{'cpu ms/step':>14}")
    for name, wall, cpu in rows:
        print(f"{name:26}{wall:>14.2f}{cpu:>14.2f}")


async def main(runs: int, load: bool = False) -> dict[str, object]:
    from agentledger.app.registry import register_pack

    register_pack("bench", "bench._noop_pack:PACK")  # before the stack seeds: its principal
    cached_bytecode()
    before = os.getloadavg()[0]
    async with embedded_stack() as stack:
        with cpu_hog(load):
            samples = await alternating(stack, runs)
    figures = summary(samples)
    _table(figures, runs, load)
    result: dict[str, object] = {
        **figures,
        "load": load,
        "loadavg_1m": [round(before, 2), round(os.getloadavg()[0], 2)],
        "cpus": len(os.sched_getaffinity(0)),
        "steps_per_run": STEPS,
        "runs": runs,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--load", action="store_true", help="saturate one core with a busy loop meanwhile"
    )
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.load))
