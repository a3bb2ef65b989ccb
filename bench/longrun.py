"""Long runs: history growth with and without compaction, and cost per step as a run goes on.

    python -m bench.longrun [--actions 1000]

Prints history events and bytes per step for a 200-step run that never compacts and for a run of
``--actions`` tool calls that continues as new at completed-operation boundaries, the largest
history any run in the chain reached as a fraction of Temporal's limits (51,200 events / 50 MB),
the size of the state each continuation carried near actions 100, 1,000 and 10,000 (bounded to a
window, ``domain.window``: it should stay flat), and the time per step near the start vs near
the end (medians of 100 steps, from the ledger's recorded step times). Targets: late ≤ 1.3×
early, the carried state flat, the run completed (no ``state_too_large``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
from typing import Any, cast

import orjson
from temporalio.client import Client

from agentledger.app import runs as client_ops
from agentledger.app.registry import register_pack
from agentledger.domain.events import HistoryCompacted, RunEvent, StepStarted, ToolCallAuthorised
from agentledger.domain.fold import project
from agentledger.domain.state import WorkingState
from agentledger.packs import Pack
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


async def run_loop(stack: Any, pack: Pack) -> tuple[str, list[RunEvent]]:
    order = pack.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
    handle = await client_ops.start_run(
        stack.client, stack.settings.task_queue, order, issuer=stack.issuer
    )
    result = await handle.result()
    assert result.status == "completed", result
    return handle.id, stack.runtime.ledger.read(handle.id)


def carried_sizes(events: list[RunEvent]) -> dict[int, int]:
    """Bytes of the state each continuation carried (its compaction's facts), by the number of
    actions the run had completed at that point."""
    return {
        WorkingState.model_validate(e.facts).used.tool_calls: len(orjson.dumps(e.facts))
        for e in events
        if isinstance(e, HistoryCompacted)
    }


def properties(events: list[RunEvent], actions: int) -> dict[str, bool]:
    """The long-run properties, checked on the whole ledger: every call made exactly once, the
    whole log and its latest compaction fold to the same state, and every action accounted for
    (in the state's window or its archive)."""
    calls = sorted(e.arguments["i"] for e in events if isinstance(e, ToolCallAuthorised))  # type: ignore[type-var]
    whole = project(events)
    head = max(i for i, e in enumerate(events) if isinstance(e, HistoryCompacted))
    archived = whole.archived.entries.get("completed_actions", 0) if whole.archived else 0
    return {
        "calls_exactly_once": calls == list(range(actions)),
        "fold_agrees": project(events[head:]) == whole,
        "actions_accounted": archived + len(whole.completed_actions) == actions,
    }


def near(sizes: dict[int, int], actions: int) -> tuple[int, int]:
    """The compaction nearest to ``actions`` completed actions: (actions, carried bytes)."""
    at = min(sizes, key=lambda n: abs(n - actions))
    return at, sizes[at]


async def main(actions: int) -> dict[str, Any]:
    # The long loop is built for the length asked for and registered under its usual name.
    _noop_pack.ACTIONS_PACK = _noop_pack.build_pack(  # type: ignore[attr-defined]
        "bench_long", actions, _noop_pack.LONG_PACK.profile.compaction
    )
    register_pack("bench_long", "bench._noop_pack:ACTIONS_PACK")
    register_pack("bench_flat", "bench._noop_pack:UNCOMPACTED_PACK")
    async with embedded_stack() as stack, stack.runtime.worker(stack.client):
        flat_id, _ = await run_loop(stack, _noop_pack.UNCOMPACTED_PACK)
        flat = await chain_histories(stack.client, flat_id)
        long_id, long_events = await run_loop(stack, _noop_pack.ACTIONS_PACK)  # type: ignore[attr-defined]
        chain = await chain_histories(stack.client, long_id)
    flat_steps = cast(int, _noop_pack.UNCOMPACTED_PACK.profile.model.settings["steps"])
    times = step_times_ms(long_events)
    # Medians over a compaction cycle or more (~65 steps), so neither end is only the short
    # histories of a fresh execution, and a busy machine's spikes do not decide the ratio.
    span = min(100, len(times) // 4)
    early, late = statistics.median(times[5 : 5 + span]), statistics.median(times[-span - 2 : -2])
    max_fraction = max(max(e / TEMPORAL_MAX_EVENTS, b / TEMPORAL_MAX_BYTES) for e, b in chain)
    contiguous = [e.seq for e in long_events] == list(range(1, len(long_events) + 1))
    sizes = carried_sizes(long_events)
    milestones = [m for m in (100, 1_000, 10_000, 100_000) if m <= actions]
    carried = {m: near(sizes, m) for m in milestones}
    print(f"{'':34}{'events/step':>12}{'bytes/step':>12}{'runs':>6}")
    print(
        f"{'200 steps, no compaction':34}{flat[0][0] / flat_steps:>12.1f}"
        f"{flat[0][1] / flat_steps:>12.0f}{len(flat):>6}"
    )
    print(
        f"{f'{actions:,} steps, continue-as-new':34}{sum(e for e, _ in chain) / actions:>12.1f}"
        f"{sum(b for _, b in chain) / actions:>12.0f}{len(chain):>6}"
    )
    print(
        f"largest history in the chain: {max(e for e, _ in chain)} events, "
        f"{max(b for _, b in chain)} bytes ({max_fraction:.2%} of Temporal's limit)"
    )
    for m, (at, size) in carried.items():
        print(f"state carried near action {m:>6,}: {size:>7,} bytes (at action {at:,})")
    print(
        f"ms/step, median of steps 5–{5 + span}: {early:.1f}; of the last {span}: {late:.1f} "
        f"({late / early:.2f}×); ledger holds {len(long_events)} contiguous events: {contiguous}"
    )
    first, last = carried[milestones[0]][1], carried[milestones[-1]][1]
    checked = properties(long_events, actions)
    print(", ".join(f"{name}: {ok}" for name, ok in checked.items()))
    result = {
        "actions": actions,
        "late_vs_early_step_ratio": round(late / early, 3),
        "max_history_fraction": round(max_fraction, 4),
        "early_step_ms": round(early, 2),
        "late_step_ms": round(late, 2),
        "carried_bytes": {m: size for m, (_, size) in carried.items()},
        "carried_last_vs_first": round(last / first, 3),
        "runs_in_chain": len(chain),
        "ledger_events": len(long_events),
        "ledger_contiguous": contiguous,
        **checked,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=_noop_pack.LONG_STEPS)
    asyncio.run(main(parser.parse_args().actions))
