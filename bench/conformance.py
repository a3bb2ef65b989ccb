"""External conformance: τ²-bench and AgentDojo through the governed runtime, on one embedded stack.

τ²: the train splits of retail and airline; each task's gold actions are proposed by a scripted
model, writes approved by a scripted approver; a task passes on τ²'s DB-hash oracle with one
receipt per write. AgentDojo: banking and slack, every replayable (user task, injection task) pair
under the ``important_instructions`` attack with a fully compromised scripted model; the figures
are AgentDojo's own utility and security checks (ungoverned, every attack succeeds).

    python -m bench.conformance [--suites tau2-retail,tau2-airline,agentdojo-banking,...]

Prints per-suite counts, then one JSON line: tau2_passed, tau2_total, agentdojo_attacks_succeeded,
agentdojo_pairs, agentdojo_utility, agentdojo_utility_baseline, seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from agentledger.registry import register_pack
from bench._stack import Stack, embedded_stack

SUITES = ("tau2-retail", "tau2-airline", "agentdojo-banking", "agentdojo-slack")


def _register() -> None:
    from agentledger.packs.agentdojo import PACK_TARGETS as DOJO
    from agentledger.packs.tau2 import PACK_TARGETS as TAU2

    for name, target in {**TAU2, **DOJO}.items():
        register_pack(name, target)


async def _tau2(stack: Stack, name: Any, totals: dict[str, int]) -> None:
    from agentledger.packs.tau2.catalog import tasks
    from bench.hosted.driver import drive
    from bench.hosted.tau2 import judge, specs

    runs = specs(name, sorted(tasks(name, "train"), key=int), "approve")
    await drive(stack.client, stack.settings.task_queue, runs, issuer=stack.issuer)
    outcomes = [judge(stack.runtime.ledger, spec, "approve") for spec in runs]
    passed = sum(o.passed for o in outcomes)
    print(f"tau2 {name} train: {passed}/{len(outcomes)} tasks passed")
    for o in outcomes:
        if not o.passed:
            print(f"  task {o.task_id}: {'; '.join(o.problems)}")
    totals["tau2_passed"] += passed
    totals["tau2_total"] += len(outcomes)


async def _agentdojo(stack: Stack, name: Any, totals: dict[str, int]) -> None:
    from bench.hosted.agentdojo import judge, specs
    from bench.hosted.driver import drive

    runs = specs(name)
    await drive(stack.client, stack.settings.task_queue, runs, issuer=stack.issuer, concurrency=8)
    outcomes = [judge(stack.runtime.ledger, spec) for spec in runs]
    attacks = sum(o.attack_succeeded for o in outcomes)
    utility = sum(o.utility for o in outcomes)
    base = sum(o.baseline_utility for o in outcomes)
    print(
        f"agentdojo {name} ({len(outcomes)} pairs, important_instructions): attacks blocked "
        f"{len(outcomes) - attacks}/{len(outcomes)}, utility {utility}/{len(outcomes)} "
        f"(ungoverned baseline {base}), calls denied {sum(o.blocked for o in outcomes)}, "
        f"pairs passed {sum(o.passed for o in outcomes)}/{len(outcomes)}"
    )
    totals["agentdojo_attacks_succeeded"] += attacks
    totals["agentdojo_pairs"] += len(outcomes)
    totals["agentdojo_utility"] += utility
    totals["agentdojo_utility_baseline"] += base


async def main(suites: list[str]) -> dict[str, Any]:
    _register()
    totals = dict.fromkeys(
        (
            "tau2_passed",
            "tau2_total",
            "agentdojo_attacks_succeeded",
            "agentdojo_pairs",
            "agentdojo_utility",
            "agentdojo_utility_baseline",
        ),
        0,
    )
    started = time.perf_counter()
    async with embedded_stack() as stack, stack.runtime.worker(stack.client, max_concurrent=16):
        for suite in suites:
            family, _, name = suite.partition("-")
            await (_tau2 if family == "tau2" else _agentdojo)(stack, name, totals)
    return {**totals, "seconds": round(time.perf_counter() - started, 1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default=",".join(SUITES))
    args = parser.parse_args()
    chosen = [s for s in args.suites.split(",") if s]
    unknown = sorted(set(chosen) - set(SUITES))
    if unknown:
        parser.error(f"unknown suites {unknown}; choose from {', '.join(SUITES)}")
    print(json.dumps(asyncio.run(main(chosen))))
