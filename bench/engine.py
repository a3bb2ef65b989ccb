"""Step-loop cost vs the bare Temporal floor, side by side on one embedded stack.

(a) floor: a bare workflow running, per step, the same two no-op activities an agentledger step
needs for its external calls (model + tool); (b) agentledger's real step loop with a scripted
model and a no-op tool, including context build, governance and ledger appends.

    python -m bench.engine [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.worker import Worker

from agentledger.app import Runtime, workflow_runner
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


async def _floor(client, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
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
            started = time.perf_counter()
            await client.execute_workflow(
                FloorWorkflow.run, STEPS, id=f"floor-{uuid.uuid4()}", task_queue=queue
            )
            timings.append((time.perf_counter() - started) * 1000 / STEPS)
    return timings[1:]  # the first run warms caches and connections


async def _agentledger(stack, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
    from agentledger import client_ops
    from agentledger.registry import register_pack
    from bench import _noop_pack

    register_pack("bench", "bench._noop_pack:PACK")
    runtime: Runtime = stack.runtime
    timings = []
    async with runtime.worker(stack.client):
        for _ in range(runs + 1):
            order = _noop_pack.PACK.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
            started = time.perf_counter()
            handle = await client_ops.start_run(stack.client, stack.settings.task_queue, order)
            result = await handle.result()
            assert result.status == "completed", result
            # STEPS tool steps plus the closing proceed/answer steps: charge per tool step.
            timings.append((time.perf_counter() - started) * 1000 / STEPS)
    return timings[1:]


async def main(runs: int) -> dict[str, float]:
    async with embedded_stack() as stack:
        floor = await _floor(stack.client, runs)
        ours = await _agentledger(stack, runs)
    floor_ms, step_ms = statistics.median(floor), statistics.median(ours)
    print(f"{'':24}{'ms/step (median of ' + str(runs) + ')':>26}")
    print(f"{'floor (2 no-op acts)':24}{floor_ms:>26.2f}")
    print(f"{'agentledger step':24}{step_ms:>26.2f}")
    result = {
        "floor_ms_per_step": round(floor_ms, 2),
        "step_ms": round(step_ms, 2),
        "step_vs_floor": round(step_ms / floor_ms, 3),
        "steps_per_run": STEPS,
        "runs": runs,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
