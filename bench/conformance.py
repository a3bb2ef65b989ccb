"""External conformance: τ²-bench and AgentDojo through the governed runtime, on one embedded stack.

τ²: a split (``train`` unless named) of retail and airline; each task's gold actions are proposed
by a scripted model, writes approved by a scripted approver; a task passes on τ²'s DB-hash oracle
with one receipt per write. AgentDojo: banking and slack, every replayable (user task, injection
task) pair under an attack (``important_instructions`` unless named) at a benchmark version
(``v1.2.2`` unless named) with a fully compromised scripted model; the figures are AgentDojo's own
utility and security checks (ungoverned, every attack succeeds), and a pair fails if any call of
the user's own task is denied. AgentDojo runs on *oracle grants* (derived from the user task's
ground truth): it measures enforcement, not planning.

    python -m bench.conformance [--suites tau2-retail,tau2-airline,agentdojo-banking,...]
        [--tau2-split train] [--agentdojo-attack important_instructions]
        [--agentdojo-version v1.2.2] [--limit N]

``--limit N`` runs the first N tasks (τ²) or replayable pairs (AgentDojo) of each suite. Prints
per-suite counts labelled with what ran, then one JSON line: tau2_passed, tau2_total,
agentdojo_attacks_succeeded, agentdojo_own_calls_denied, agentdojo_pairs, agentdojo_utility,
agentdojo_utility_baseline, the split, attack and version run, seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from agentledger.app.registry import register_pack
from agentledger.packs.agentdojo.catalog import ATTACK, BENCHMARK_VERSION
from bench._stack import Stack, embedded_stack

SUITES = ("tau2-retail", "tau2-airline", "agentdojo-banking", "agentdojo-slack")
TOTALS = (
    "tau2_passed",
    "tau2_total",
    "agentdojo_attacks_succeeded",
    "agentdojo_own_calls_denied",
    "agentdojo_pairs",
    "agentdojo_utility",
    "agentdojo_utility_baseline",
)


@dataclass(frozen=True)
class Options:
    tau2_split: str = "train"
    agentdojo_attack: str = ATTACK
    agentdojo_version: str = BENCHMARK_VERSION
    limit: int = 0
    """Runs per suite (0: all)."""

    def cut(self, items: list[Any]) -> list[Any]:
        return items[: self.limit] if self.limit > 0 else items


def _register() -> None:
    from agentledger.packs.agentdojo import PACK_TARGETS as DOJO
    from agentledger.packs.tau2 import PACK_TARGETS as TAU2

    for name, target in {**TAU2, **DOJO}.items():
        register_pack(name, target)


async def _tau2(stack: Stack, name: Any, options: Options, totals: dict[str, int]) -> None:
    from agentledger.packs.tau2.catalog import tasks
    from bench.hosted.driver import drive
    from bench.hosted.tau2 import judge, specs

    task_ids = options.cut(sorted(tasks(name, options.tau2_split), key=int))
    runs = specs(name, task_ids, "approve")
    await drive(stack.client, stack.settings.task_queue, runs, issuer=stack.issuer)
    outcomes = [judge(stack.runtime.ledger, spec, "approve") for spec in runs]
    passed = sum(o.passed for o in outcomes)
    print(f"tau2 {name} {options.tau2_split}: {passed}/{len(outcomes)} tasks passed")
    for o in outcomes:
        if not o.passed:
            print(f"  task {o.task_id}: {'; '.join(o.problems)}")
    totals["tau2_passed"] += passed
    totals["tau2_total"] += len(outcomes)


async def _agentdojo(stack: Stack, name: Any, options: Options, totals: dict[str, int]) -> None:
    from bench.hosted.agentdojo import judge, specs
    from bench.hosted.driver import drive

    runs = options.cut(specs(name, options.agentdojo_attack, options.agentdojo_version))
    await drive(stack.client, stack.settings.task_queue, runs, issuer=stack.issuer, concurrency=8)
    outcomes = [judge(stack.runtime.ledger, spec) for spec in runs]
    ran = sorted({(o.pair.attack, o.pair.version) for o in outcomes})  # what the runs recorded
    attacks = sum(o.attack_succeeded for o in outcomes)
    utility = sum(o.utility for o in outcomes)
    base = sum(o.baseline_utility for o in outcomes)
    own = sum(o.own_denied for o in outcomes)
    print(
        f"agentdojo {name} ({len(outcomes)} pairs, {', '.join(map(' '.join, ran))}; oracle "
        f"grants: measures enforcement, not planning): attacks blocked "
        f"{len(outcomes) - attacks}/{len(outcomes)}, utility {utility}/{len(outcomes)} "
        f"(ungoverned baseline {base}), calls denied {sum(o.blocked for o in outcomes)} "
        f"(of the user's own: {own} in {sum(o.own_denied > 0 for o in outcomes)} pairs), "
        f"pairs passed {sum(o.passed for o in outcomes)}/{len(outcomes)}"
    )
    for o in outcomes:
        if not o.passed:
            print(f"  {o.user_task}/{o.injection_task}: {'; '.join(o.problems)}")
    totals["agentdojo_own_calls_denied"] += own
    totals["agentdojo_attacks_succeeded"] += attacks
    totals["agentdojo_pairs"] += len(outcomes)
    totals["agentdojo_utility"] += utility
    totals["agentdojo_utility_baseline"] += base


async def main(suites: list[str], options: Options | None = None) -> dict[str, Any]:
    options = options or Options()
    _register()
    totals = dict.fromkeys(TOTALS, 0)
    started = time.perf_counter()
    async with embedded_stack() as stack, stack.runtime.worker(stack.client, max_concurrent=16):
        for suite in suites:
            family, _, name = suite.partition("-")
            await (_tau2 if family == "tau2" else _agentdojo)(stack, name, options, totals)
    labels = {
        "tau2_split": options.tau2_split,
        "agentdojo_attack": options.agentdojo_attack,
        "agentdojo_version": options.agentdojo_version,
    }
    return {**totals, **labels, "seconds": round(time.perf_counter() - started, 1)}


def check(suites: list[str], options: Options) -> None:
    """Refuse a split, attack or version a chosen suite does not have (a typed ``ValueError``)
    before any stack starts."""
    from bench.hosted.agentdojo import pairs

    for suite in suites:
        family, _, name = suite.partition("-")
        if family == "tau2":
            from agentledger.packs.tau2.catalog import tasks

            tasks(name, options.tau2_split)  # type: ignore[arg-type]
        else:
            pairs(name, options.agentdojo_attack, options.agentdojo_version)  # type: ignore[arg-type]


def _options(args: argparse.Namespace) -> Options:
    return Options(
        tau2_split=args.tau2_split,
        agentdojo_attack=args.agentdojo_attack,
        agentdojo_version=args.agentdojo_version,
        limit=args.limit,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default=",".join(SUITES))
    defaults = Options()
    parser.add_argument("--tau2-split", default=defaults.tau2_split)
    parser.add_argument("--agentdojo-attack", default=defaults.agentdojo_attack)
    parser.add_argument("--agentdojo-version", default=defaults.agentdojo_version)
    parser.add_argument("--limit", type=int, default=0, help="runs per suite (0: all)")
    args = parser.parse_args()
    chosen = [s for s in args.suites.split(",") if s]
    unknown = sorted(set(chosen) - set(SUITES))
    if unknown:
        parser.error(f"unknown suites {unknown}; choose from {', '.join(SUITES)}")
    try:
        check(chosen, _options(args))
    except ValueError as exc:  # UnknownSplit (τ²), NotHosted (AgentDojo)
        parser.error(str(exc))
    print(json.dumps(asyncio.run(main(chosen, _options(args)))))
