"""A 200-turn conversation: cost per turn stays flat while the run continues as new.

    python -m bench.conversation [--turns N]

One run of the scripted ``chat_long`` pack (``bench._chat_pack``): the customer replies, the
agent answers, the run parks again; every 400 history events it continues as new. Per turn it
measures the workflow's own time from the customer's reply to the agent's next message (both
recorded in the ledger, so no polling interval is in it) and the client's round trip. Prints
ms per turn around turn 10 and around the last turn (``late_vs_early_turn_ratio``, target
≤ 1.3), the largest history of the chain as a fraction of Temporal's limits, and a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from agentledger.app import runs as client_ops
from agentledger.domain import events as ev
from bench._chat_pack import CHAT_LONG, CUSTOMER
from bench._stack import embedded_stack
from bench.longrun import TEMPORAL_MAX_BYTES, TEMPORAL_MAX_EVENTS, chain_histories

COLOURS = ("red", "green", "blue")


def turn_times_ms(events: list[ev.RunEvent]) -> list[float]:
    """Per reply: from the customer's message to the agent's next one (workflow time)."""
    times, replied = [], None
    for event in events:
        if isinstance(event, ev.UserReplied):
            replied = event.recorded_at
        elif isinstance(event, ev.ReplyAwaited) and replied is not None:
            times.append((event.recorded_at - replied).total_seconds() * 1000)
            replied = None
    return times


async def converse(stack: Any, turns: int) -> tuple[str, list[float]]:
    order = CHAT_LONG.make_work_order("I'd like to pick a colour", CUSTOMER)
    handle = await client_ops.start_run(
        stack.client, stack.settings.task_queue, order, issuer=stack.issuer
    )
    await client_ops.wait_for(stack.client, handle.id, pending_approval=False)
    round_trips = []
    for turn in range(turns):
        began = time.perf_counter()
        text = f"turn {turn}: {COLOURS[turn % 3]}, please"
        await client_ops.reply(stack.client, handle.id, CUSTOMER.user_id, text, issuer=stack.issuer)
        state = await client_ops.wait_for(stack.client, handle.id, pending_approval=False)
        assert state.awaiting is not None, f"turn {turn}: the run {state.status}"
        round_trips.append((time.perf_counter() - began) * 1000)
    return handle.id, round_trips


def _around(values: list[float], index: int, width: int = 5) -> float:
    return statistics.median(values[max(index - width, 0) : index + width])


async def main(turns: int) -> dict[str, Any]:
    async with embedded_stack() as stack, stack.runtime.worker(stack.client):
        run_id, round_trips = await converse(stack, turns)
        chain = await chain_histories(stack.client, run_id)
        events = stack.runtime.ledger.read(run_id)
    times = turn_times_ms(events)
    early, late = _around(times, 10), _around(times, len(times) - 6)
    early_rt, late_rt = _around(round_trips, 10), _around(round_trips, len(round_trips) - 6)
    fraction = max(max(e / TEMPORAL_MAX_EVENTS, b / TEMPORAL_MAX_BYTES) for e, b in chain)
    replies = sum(isinstance(e, ev.UserReplied) for e in events)
    contiguous = [e.seq for e in events] == list(range(1, len(events) + 1))
    print(f"{'':28}{'turn 10':>10}{f'turn {turns}':>10}{'ratio':>8}")
    print(f"{'workflow ms per turn':28}{early:>10.1f}{late:>10.1f}{late / early:>8.2f}")
    print(f"{'client round trip ms':28}{early_rt:>10.1f}{late_rt:>10.1f}{late_rt / early_rt:>8.2f}")
    print(
        f"{len(chain)} runs in the chain; largest history {max(e for e, _ in chain)} events, "
        f"{max(b for _, b in chain)} bytes ({fraction:.2%} of Temporal's limit); "
        f"{replies} replies in a ledger of {len(events)} contiguous events: {contiguous}"
    )
    result = {
        "turns": turns,
        "late_vs_early_turn_ratio": round(late / early, 3),
        "early_turn_ms": round(early, 2),
        "late_turn_ms": round(late, 2),
        "late_vs_early_round_trip_ratio": round(late_rt / early_rt, 3),
        "max_history_fraction": round(fraction, 4),
        "runs_in_chain": len(chain),
        "replies_recorded": replies,
        "ledger_contiguous": contiguous,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    asyncio.run(main(parser.parse_args().turns))
