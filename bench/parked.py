"""Worker memory with many runs parked on approval, by sticky-cache size.

For each cache size, a fresh worker *process* (``agentledger worker``) serves N refund runs on
one embedded stack until every run waits for its approval. The worker's resident memory (VmRSS)
is read from /proc once its first run has parked (everything imported, one run served: the
floor) and again, with its peak (VmHWM), once all N have; then the runs are decided to show the
cost of waking a run that was evicted from the cache (it is replayed from history).

    python -m bench.parked [--runs 500] [--cache-sizes 1000,100,10]

Prints a table (one row per cache size, with the ratio to the first row), then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack
from bench._stack import Stack, embedded_stack

REQUEST = "Can I get a refund for order {order}? It arrived late."


def _memory_mb(pid: int) -> tuple[float, float]:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    kb = lambda name: int(fields[name].split()[0])  # noqa: E731
    return kb("VmRSS") / 1024, kb("VmHWM") / 1024


def _worker(stack: Stack, cache_size: int) -> subprocess.Popen[bytes]:
    s = stack.settings
    env = {
        **os.environ,
        "AGENTLEDGER_TEMPORAL_ADDRESS": s.address,
        "AGENTLEDGER_DATABASE_URL": s.ledger_url,
        "AGENTLEDGER_DATA_DIR": str(s.data_dir),
        "AGENTLEDGER_TASK_QUEUE": s.task_queue,
        "AGENTLEDGER_MAX_CACHED_RUNS": str(cache_size),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "agentledger.cli", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _park(stack: Stack, runs: int, already: int = 0) -> list[str]:
    """Start ``runs`` refund runs (one order each, all late) and wait until each awaits approval."""
    pack, principal = get_pack("support"), stack.runtime.ledger.get_principal("usr_73")
    assert principal is not None
    ids = []
    for _ in range(runs):
        order = pack.make_work_order(REQUEST.format(order="ord_4821"), principal)
        ids.append(
            (
                await client_ops.start_run(
                    stack.client, stack.settings.task_queue, order, issuer=stack.issuer
                )
            ).id
        )
    # Counted in the ledger's approvals inbox: polling 500 queries would load the worker measured.
    deadline = time.monotonic() + 1800
    while len(stack.runtime.ledger.approvals(status="pending")) < already + runs:
        assert time.monotonic() < deadline, "the runs did not all park"
        await asyncio.sleep(1)
    return ids


async def _wake(stack: Stack, ids: list[str]) -> float:
    """Reject every parked run (no refunds to pay); the mean seconds per decision."""
    started = time.perf_counter()
    for run_id in ids:
        state = await client_ops.live_state(stack.client, run_id)
        for approval_id in state.pending_approvals:
            await client_ops.decide(
                stack.client,
                run_id,
                approval_id,
                "ops_lead_1",
                issuer=stack.issuer,
                approve=False,
                reason="bench",
            )
    return (time.perf_counter() - started) / max(len(ids), 1)


async def measure(runs: int, cache_size: int) -> dict[str, float]:
    async with embedded_stack() as stack:
        worker = _worker(stack, cache_size)
        try:
            first = await _park(stack, 1)  # the worker is up, has imported all, ran one run
            idle, _ = _memory_mb(worker.pid)
            started = time.perf_counter()
            ids = first + await _park(stack, runs - 1, already=1)
            parked_s = time.perf_counter() - started
            await asyncio.sleep(2)  # let the worker settle after the last task
            rss, peak = _memory_mb(worker.pid)
            decide_s = await _wake(stack, ids)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    return {
        "cache_size": cache_size,
        "runs": runs,
        "one_run_mb": round(idle, 1),
        "rss_mb": round(rss, 1),
        "peak_mb": round(peak, 1),
        "park_seconds": round(parked_s, 1),
        "decide_ms": round(decide_s * 1000, 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--cache-sizes", default="1000,100,10")
    args = parser.parse_args()
    rows = []
    for size in args.cache_sizes.split(","):
        rows.append(await measure(args.runs, int(size)))
        print(f"· cache {size}: {rows[-1]}", flush=True)
    base = rows[0]
    print(
        f"{'cache':>6} {'runs':>5} {'1 run MB':>9} {'RSS MB':>8} {'peak MB':>8} {'×RSS':>6} "
        f"{'decide ms':>10}"
    )
    for r in rows:
        print(
            f"{r['cache_size']:>6} {r['runs']:>5} {r['one_run_mb']:>9} {r['rss_mb']:>8} "
            f"{r['peak_mb']:>8} {r['rss_mb'] / base['rss_mb']:>6.2f} {r['decide_ms']:>10}"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    asyncio.run(main())
