"""Long runs: history growth with and without compaction, and cost per step over 1,000 steps.

    python -m bench.longrun

Prints history events and bytes per step for a 200-step run that never compacts and for the
1,000-step run that continues as new at completed-operation boundaries, the largest history any
run in the chain reached as a fraction of Temporal's limits (51,200 events / 50 MB), and the time
per step around step 10 vs around step 1,000 (from the ledger's recorded step times).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
from typing import Any

from temporalio.client import Client

from agentledger import client_ops
from agentledger.domain.events import RunEvent, StepStarted
from agentledger.registry import register_pack
from bench import _noop_pack
from bench._stack import embedded_stack

TEMPORAL_MAX_EVENTS = 51_200
TEMPORAL_MAX_BYTES = 50 * 1024 * 1024


async def chain_histories(client: Client, run_id: str) -> list[tuple[int, int]]:
    """(events, bytes) of every run in a continue-as-new chain."""
    sizes = []
    async for execution in client.list_workflows(f'WorkflowId = "{run_id}"'):
        handle = client.get_workflow_handle(run_id, run_id=execution.run_id)
        history = await handle.fetch_history()
        sizes.append((len(history.events), sum(e.ByteSize() for e in history.events)))
    return sizes


def step_times_ms(events: list[RunEvent]) -> list[float]:
    starts = [e.recorded_at for e in events if isinstance(e, StepStarted)]
    return [(b - a).total_seconds() * 1000 for a, b in itertools.pairwise(starts)]


async def run_loop(stack: Any, pack_name: str) -> tuple[str, list[RunEvent]]:
    pack = _noop_pack.LONG_PACK if pack_name == "bench_long" else _noop_pack.UNCOMPACTED_PACK
    order = pack.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
    handle = await client_ops.start_run(stack.client, stack.settings.task_queue, order)
    result = await handle.result()
    assert result.status == "completed", result
    return handle.id, stack.runtime.ledger.read(handle.id)


async def main() -> dict[str, Any]:
    register_pack("bench_long", "bench._noop_pack:LONG_PACK")
    register_pack("bench_flat", "bench._noop_pack:UNCOMPACTED_PACK")
    async with embedded_stack() as stack, stack.runtime.worker(stack.client):
        flat_id, _ = await run_loop(stack, "bench_flat")
        flat = await chain_histories(stack.client, flat_id)
        long_id, long_events = await run_loop(stack, "bench_long")
        chain = await chain_histories(stack.client, long_id)
    flat_steps = _noop_pack.UNCOMPACTED_PACK.profile.model.settings["steps"]
    long_steps = _noop_pack.LONG_STEPS
    times = step_times_ms(long_events)
    early, late = statistics.median(times[5:15]), statistics.median(times[-12:-2])
    max_fraction = max(max(e / TEMPORAL_MAX_EVENTS, b / TEMPORAL_MAX_BYTES) for e, b in chain)
    contiguous = [e.seq for e in long_events] == list(range(1, len(long_events) + 1))
    print(f"{'':34}{'events/step':>12}{'bytes/step':>12}{'runs':>6}")
    print(
        f"{'200 steps, no compaction':34}{flat[0][0] / flat_steps:>12.1f}"  # type: ignore[operator]
        f"{flat[0][1] / flat_steps:>12.0f}{len(flat):>6}"
    )  # type: ignore[operator]
    print(
        f"{'1,000 steps, continue-as-new':34}{sum(e for e, _ in chain) / long_steps:>12.1f}"
        f"{sum(b for _, b in chain) / long_steps:>12.0f}{len(chain):>6}"
    )
    print(
        f"largest history in the chain: {max(e for e, _ in chain)} events, "
        f"{max(b for _, b in chain)} bytes ({max_fraction:.2%} of Temporal's limit)"
    )
    print(
        f"ms/step around step 10: {early:.1f}; around step 1,000: {late:.1f}; "
        f"ledger holds {len(long_events)} contiguous events: {contiguous}"
    )
    result = {
        "late_vs_early_step_ratio": round(late / early, 3),
        "max_history_fraction": round(max_fraction, 4),
        "early_step_ms": round(early, 2),
        "late_step_ms": round(late, 2),
        "runs_in_chain": len(chain),
        "ledger_events": len(long_events),
        "ledger_contiguous": contiguous,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    asyncio.run(main())
