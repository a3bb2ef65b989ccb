"""The approval protocol explored deeply: a state machine over the pure protocol, and spin.

    python -m bench.protocol [--examples 2000] [--steps 40] [--derandomize]

First ``bench.protocol_deep``: hypothesis drives refund runs through approvals, rejections,
expiries (the domain's clock is the machine's), forgeries, replayed assertions, two approvers at
once, continue-as-new, replay and crashes inside any workflow task, on the pure domain (no
server); it prints how often each rule fired and what came of it. Then spin checks the model
``agentledger/domain/approval_protocol.pml`` (two runs refunding one order, two approvers, a
forger, expiry, a crash at every step) over every interleaving, and each broken variant of it
(no row lock, no idempotency key, a handler trusting its validator) must be caught. Needs
Debian's ``spin`` and a C compiler; the last line printed is JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.protocol_deep import explore

MODEL = Path(__file__).resolve().parents[1] / "agentledger" / "domain" / "approval_protocol.pml"


@dataclass(frozen=True)
class SpinResult:
    states: int
    errors: int
    depth: int
    seconds: float
    report: str


def check(*defines: str, model: Path = MODEL, optimise: bool = True) -> SpinResult:
    """Generate the verifier, compile it and search the whole state space for the ``ltl``
    (``defines``: the model's variants, ``NO_ROW_LOCK`` or ``MAX_CRASHES=0``). ``optimise``
    off: compiled in a fifth of the time, searched slower (for small or failing searches)."""
    spin, cc = shutil.which("spin"), shutil.which("cc") or shutil.which("gcc")
    if spin is None or cc is None:
        raise FileNotFoundError("spin and a C compiler are needed (apt-get install spin gcc)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agentledger-spin-") as work:
        shutil.copy(model, Path(work) / model.name)
        flags = [f"-D{name}" for name in defines]
        _run([spin, *flags, "-a", model.name], work)
        level = "-O2" if optimise else "-O0"
        _run([cc, level, "-w", "-DCOLLAPSE", "-o", "pan", "pan.c"], work)
        report = _run(["./pan", "-a", "-m200000"], work, check=False)
    return SpinResult(
        states=_figure(r"(\d+) states, stored", report),
        errors=_figure(r"errors: (\d+)", report),
        depth=_figure(r"depth reached (\d+)", report),
        seconds=round(time.perf_counter() - started, 2),
        report=report,
    )


def _run(argv: list[str], cwd: str, *, check: bool = True) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr or done.stdout}")
    return done.stdout


def _figure(pattern: str, report: str) -> int:
    found = re.search(pattern, report)
    if found is None:
        raise RuntimeError(f"spin's report has no {pattern!r}:\n{report}")
    return int(found.group(1))


BROKEN = ("NO_ROW_LOCK", "NO_IDEMPOTENCY", "NO_RECHECK")
"""Variants of the model spin must find a violation in (see the model's header)."""


def explore_deeply(examples: int, steps: int, derandomize: bool) -> dict[str, Any]:
    started = time.perf_counter()
    found = explore(examples, steps, derandomize=derandomize)
    seconds = round(time.perf_counter() - started, 1)
    print(f"state machine: {found.examples} examples, {found.steps} steps ({seconds} s)")
    for rule, count in sorted(found.rules.items(), key=lambda item: -item[1]):
        print(f"  {rule:<26} {count:>7}")
    print("outcomes:")
    for outcome, count in sorted(found.outcomes.items()):
        print(f"  {outcome:<58} {count:>7}")
    if found.violation is not None:
        print(f"VIOLATION:\n{found.violation}")
    outcomes = found.outcomes
    return {
        "state_machine_examples": found.examples,
        "state_machine_steps": found.steps,
        "state_machine_seconds": seconds,
        "expiries_reached": outcomes.get("expire:expired", 0),
        "decisions_after_expiry_refused": _outcomes(outcomes, ":expired", "decide", "approvers"),
        "grants": _outcomes(outcomes, "granted"),
        "refunds_paid": outcomes.get("pay:succeeded", 0),
        "violations": 0 if found.violation is None else 1,
        "rule_counts": dict(sorted(found.rules.items())),
    }


def _outcomes(outcomes: dict[str, int], part: str, *rules: str) -> int:
    return sum(
        n for key, n in outcomes.items()
        if part in key and (not rules or key.startswith(rules))
    )  # fmt: skip


def check_the_model() -> dict[str, Any]:
    result = check()
    print(f"spin: {MODEL.name}: {result.states:,} states, depth {result.depth}, "
          f"{result.errors} errors ({result.seconds} s)")  # fmt: skip
    caught = {}
    for variant in BROKEN:
        broken = check(variant, optimise=False)  # spin stops at the first violation
        caught[variant] = broken.errors >= 1 and "assertion violated" in broken.report
        print(f"spin -D{variant}: {'violation found' if caught[variant] else 'NOT CAUGHT'}")
    return {
        "spin_states": result.states,
        "spin_depth": result.depth,
        "spin_errors": result.errors,
        "spin_seconds": result.seconds,
        "spin_broken_variants_caught": sum(caught.values()),
        "spin_broken_variants": len(BROKEN),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--derandomize", action="store_true", help="the same examples each time")
    args = parser.parse_args()
    started = time.perf_counter()
    figures = explore_deeply(args.examples, args.steps, args.derandomize)
    figures.update(check_the_model())
    figures["wall_seconds"] = round(time.perf_counter() - started, 1)
    print(f"wall: {figures['wall_seconds']} s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
