"""Does one tenant's burst queue another tenant's tasks behind it? Temporal's fairness keys,
as runs set them (``workflows._core.Run.fair_share``), with and without the server's
``matching.enableFairness``.

A dev server (one task-queue partition, so the order is the queue's, not the partitions'),
``--backlog`` activity tasks keyed by tenant A and then ``--others`` keyed by tenant B are queued
before a worker with one activity slot starts. The order they run in shows where B's tasks land:
with fairness they interleave with A's; without it they wait behind all of A's.

    python -m bench.fairness [--backlog 30] [--others 3]

Prints each order, then one JSON line (``b_positions_fair``, ``b_positions_fifo``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import Priority
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from agentledger.app.devserver import temporal_binary
    from bench._stack import free_port

ORDER: list[str] = []
ONE_PARTITION = (
    "--dynamic-config-value",
    "matching.numTaskqueueReadPartitions=1",
    "--dynamic-config-value",
    "matching.numTaskqueueWritePartitions=1",
)


@activity.defn
async def call_model(tenant: str) -> None:
    ORDER.append(tenant)
    await asyncio.sleep(0.02)


@workflow.defn
class Tenanted:
    @workflow.run
    async def run(self, tenant: str) -> None:
        await workflow.execute_activity(
            call_model,
            tenant,
            start_to_close_timeout=timedelta(seconds=30),
            task_queue="models",
            priority=Priority(fairness_key=tenant),
        )


async def order(fair: bool, backlog: int, others: int) -> str:
    port, flags = free_port(), list(ONE_PARTITION)
    if fair:
        flags += ["--dynamic-config-value", "matching.enableFairness=true"]
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "temporal.db")
        args = ["server", "start-dev", "--headless", "--port", str(port), "--db-filename", db]
        server = subprocess.Popen([temporal_binary(), *args, *flags], stdout=subprocess.DEVNULL)
        try:
            return await _queued_then_run(port, backlog, others)
        finally:
            server.terminate()
            server.wait()


async def _queued_then_run(port: int, backlog: int, others: int) -> str:
    for _ in range(200):
        try:
            client = await Client.connect(f"127.0.0.1:{port}")
            break
        except RuntimeError:
            await asyncio.sleep(0.1)
    ORDER.clear()
    async with Worker(client, task_queue="runs", workflows=[Tenanted]):
        tenants = ["A"] * backlog + ["B"] * others
        handles = [
            await client.start_workflow(
                Tenanted.run, t, id=f"{t}-{uuid.uuid4().hex[:8]}", task_queue="runs"
            )
            for t in tenants
        ]
        await asyncio.sleep(3)  # every task queued before anything takes one
        async with Worker(
            client, task_queue="models", activities=[call_model], max_concurrent_activities=1
        ):
            await asyncio.gather(*(h.result() for h in handles))
    return "".join(ORDER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog", type=int, default=30)
    parser.add_argument("--others", type=int, default=3)
    args = parser.parse_args()
    figures = {}
    for fair in (False, True):
        ran = asyncio.run(order(fair, args.backlog, args.others))
        positions = [i + 1 for i, t in enumerate(ran) if t == "B"]
        print(f"{'fairness on ' if fair else 'fairness off'}  {ran}  B ran: {positions}")
        figures[f"b_positions_{'fair' if fair else 'fifo'}"] = positions
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
