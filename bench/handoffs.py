"""What a handoff costs: the support agent with and without its fraud-check child workflow.

    python -m bench.handoffs [--runs N]

Alternates runs of ``support`` and ``support_reviewed`` on the same late order, each until it
parks on the refund approval (the refund itself is not made, so every run sees the same order),
and prints the median wall time to that point per configuration, the ratio, the same per model
step (the child's steps included: what the child workflow's machinery adds per step), and what
the delegation added to the parent's ledger. Last line: JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from bench._stack import Stack, embedded_stack

REQUEST = "Can I get a refund for order ord_4821? It arrived late."


async def until_approval(stack: Stack, pack: str) -> tuple[float, str]:
    principal = stack.runtime.ledger.get_principal("usr_73")
    assert principal is not None
    order = get_pack(pack).make_work_order(REQUEST, principal)
    began = time.perf_counter()
    handle = await client_ops.start_run(
        stack.client, stack.settings.task_queue, order, issuer=stack.issuer
    )
    state = await client_ops.wait_for(stack.client, handle.id, pending_approval=True)
    elapsed = (time.perf_counter() - began) * 1000
    (approval_id,) = state.pending_approvals
    await client_ops.decide(  # rejected, so the order stays refundable for the next run
        stack.client, handle.id, approval_id, "ops_lead_1", issuer=stack.issuer, approve=False
    )
    await handle.result()
    return elapsed, handle.id


def steps_to_approval(events: list[ev.RunEvent]) -> int:
    until = next(i for i, e in enumerate(events) if isinstance(e, ev.ApprovalRequested))
    return sum(isinstance(e, ev.StepStarted) for e in events[:until])


async def main(runs: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"support": [], "support_reviewed": []}
    last: dict[str, str] = {}
    async with embedded_stack() as stack, stack.runtime.worker(stack.client):
        for _ in range(runs):
            for pack in times:
                elapsed, last[pack] = await until_approval(stack, pack)
                times[pack].append(elapsed)
        plain_steps = steps_to_approval(stack.runtime.ledger.read(last["support"]))
        events = stack.runtime.ledger.read(last["support_reviewed"])
        (requested,) = [e for e in events if isinstance(e, ev.HandoffRequested)]
        child = project(stack.runtime.ledger.read(requested.child_run_id))
    plain, reviewed = (statistics.median(times[p]) for p in times)
    reviewed_steps = steps_to_approval(events) + child.used.steps
    per_step = (plain / plain_steps, reviewed / reviewed_steps)
    handoff_events = sum(e.kind.startswith("handoff_") for e in events)
    charged = [e for e in events if isinstance(e, ev.BudgetCharged) and "handoff:" in e.reason]
    print(f"{'to the refund approval':32}{'median ms':>12}{'steps':>8}{'ms/step':>10}")
    print(f"{'support (no handoff)':32}{plain:>12.1f}{plain_steps:>8}{per_step[0]:>10.1f}")
    print(
        f"{'support_reviewed (fraud check)':32}{reviewed:>12.1f}{reviewed_steps:>8}"
        f"{per_step[1]:>10.1f}"
    )
    print(
        f"{'ratio reviewed / plain':32}{reviewed / plain:>12.2f}{'':>8}"
        f"{per_step[1] / per_step[0]:>10.2f}"
    )
    print(
        f"the child run: {child.used.steps} steps, {child.used.tool_calls} tool calls, "
        f"{child.used.tokens} tokens, charged to the parent in {len(charged)} event; "
        f"{handoff_events} handoff events on the parent's timeline"
    )
    return {
        "runs_per_configuration": runs,
        "plain_ms": round(plain, 1),
        "reviewed_ms": round(reviewed, 1),
        "reviewed_vs_plain_ratio": round(reviewed / plain, 2),
        "per_step_ratio": round(per_step[1] / per_step[0], 2),
        "child_steps": child.used.steps,
        "child_tool_calls": child.used.tool_calls,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="runs per configuration")
    print(json.dumps(asyncio.run(main(parser.parse_args().runs))))
