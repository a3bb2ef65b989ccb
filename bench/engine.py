"""Step-loop cost vs the bare Temporal floor, side by side on one embedded stack.

(a) floor: a bare workflow running, per step, the same two no-op activities an agentledger step
needs for its external calls (model + tool); (b) agentledger's real step loop with a scripted
model and a no-op tool, including context build, governance and ledger appends.

    python -m bench.engine [--runs 5] [--load]

Besides wall-clock milliseconds per step, each side reports the CPU time (user + sys, from
``time.process_time``) this process spent per step: the worker, its workflows and activities,
the SQLite ledger and the client, but not the Temporal server (a separate process). The floor
mostly waits on the server; agentledger's step also spends CPU of its own (context build,
validation, serialisation), and on a busy host that CPU is what multiplies, so the CPU ratio is
the figure that survives a shared machine. ``--load`` starts one busy-looping process for the
measurement (stopped afterwards), to show the step with the other core saturated. Wall-clock
figures on a shared machine are noisy: compare ratios from one run.

The sandbox re-imports the workflow modules for every run. A deployed worker reads them as
bytecode (``pip install`` compiles it); a source checkout run with ``PYTHONDONTWRITEBYTECODE``
would recompile them from source each run (~10 ms of CPU a run, ~0.5 ms a step here), so the
bench writes bytecode to a temporary prefix outside the tree (``cached_bytecode``).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import shutil
import statistics
import sys
import tempfile
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    # The sandbox re-imports this module for FloorWorkflow; the application root (httpx, the
    # ledger) and the hog's subprocess are only used outside it.
    from agentledger.app.runtime import Runtime, workflow_runner
    from bench._cpu import Sample, cpu_hog
    from bench._stack import embedded_stack

STEPS = 20


@activity.defn
async def noop_activity(i: int) -> int:
    return i


@workflow.defn
class FloorWorkflow:
    @workflow.run
    async def run(self, steps: int) -> int:
        for i in range(steps):
            for _ in range(2):  # model call + tool call
                await workflow.execute_activity(
                    noop_activity, i, start_to_close_timeout=timedelta(seconds=10)
                )
        return steps


async def _floor(client, runs: int) -> list[tuple[float, float]]:  # type: ignore[no-untyped-def]
    queue = f"floor-{uuid.uuid4().hex[:6]}"
    timings = []
    # Same sandbox settings as agentledger's worker, so neither side pays module re-imports.
    runner = workflow_runner("bench")
    async with Worker(
        client,
        task_queue=queue,
        workflows=[FloorWorkflow],
        activities=[noop_activity],
        workflow_runner=runner,
    ):
        for _ in range(runs + 1):
            sample = Sample(STEPS)
            await client.execute_workflow(
                FloorWorkflow.run, STEPS, id=f"floor-{uuid.uuid4()}", task_queue=queue
            )
            timings.append(sample.per_step())
    return timings[1:]  # the first run warms caches and connections


async def _agentledger(stack, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
    """Wall-clock ms per step of each run (bench.observe and bench._tracing_cost use this)."""
    return [wall for wall, _ in await _agentledger_samples(stack, runs)]


async def _agentledger_samples(stack, runs: int) -> list[tuple[float, float]]:  # type: ignore[no-untyped-def]
    from agentledger.app import runs as client_ops
    from bench import _noop_pack

    runtime: Runtime = stack.runtime
    timings = []
    async with runtime.worker(stack.client):
        for _ in range(runs + 1):
            order = _noop_pack.PACK.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
            sample = Sample(STEPS)
            handle = await client_ops.start_run(
                stack.client, stack.settings.task_queue, order, issuer=stack.issuer
            )
            result = await handle.result()
            assert result.status == "completed", result
            # STEPS tool steps plus the closing proceed/answer steps: charge per tool step.
            timings.append(sample.per_step())
    return timings[1:]


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


async def main(runs: int, load: bool = False) -> dict[str, object]:
    from agentledger.app.registry import register_pack

    register_pack("bench", "bench._noop_pack:PACK")  # before the stack seeds: its principal
    cached_bytecode()
    async with embedded_stack() as stack:
        with cpu_hog(load):
            floor = await _floor(stack.client, runs)
            ours = await _agentledger_samples(stack, runs)
    floor_ms, step_ms = _median(floor, 0), _median(ours, 0)
    floor_cpu, step_cpu = _median(floor, 1), _median(ours, 1)
    print(f"medians of {runs} runs, {'with' if load else 'without'} a CPU hog")
    print(f"{'':24}{'wall ms/step':>14}{'cpu ms/step':>14}")
    print(f"{'floor (2 no-op acts)':24}{floor_ms:>14.2f}{floor_cpu:>14.2f}")
    print(f"{'agentledger step':24}{step_ms:>14.2f}{step_cpu:>14.2f}")
    print(f"{'agentledger / floor':24}{step_ms / floor_ms:>14.2f}{step_cpu / floor_cpu:>14.2f}")
    result = {
        "floor_ms_per_step": round(floor_ms, 2),
        "step_ms": round(step_ms, 2),
        "step_vs_floor": round(step_ms / floor_ms, 3),
        "floor_cpu_ms_per_step": round(floor_cpu, 2),
        "step_cpu_ms": round(step_cpu, 2),
        "step_cpu_vs_floor": round(step_cpu / floor_cpu, 3),
        "load": load,
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
