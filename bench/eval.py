"""What `agentledger eval` adds to the runs it compares, side by side on one embedded stack.

The support suite under two configurations (a tight and a generous evidence pool), on one worker
and the eval's own ledger, in rounds that alternate which goes first:

(a) eval: each work order as the eval runs it (a fresh copy of the system of record, the run
    driven through its approvals, its events read back into figures, the end state hashed,
    the expectation judged), plus the report built and rendered (table, JSON, HTML);
(b) direct: the same work orders under the same configurations, only started and driven
    through their approvals to their end (the fresh copy is made, untimed, before each).

    python -m bench.eval [--rounds 3]

Prints, per work order, the mean wall time per run of each and their ratio (target ≤ 1.1×),
then one JSON line: eval_ms_per_run, direct_ms_per_run, ratio, per_work_order, runs, rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentledger.app.config import Settings
from agentledger.app.devserver import stop_dev_server
from agentledger.app.identity import issuer_for
from agentledger.app.temporal import connect
from agentledger.evaluation.configs import Configuration, resolve_pair
from agentledger.evaluation.html import render_html
from agentledger.evaluation.render import table
from agentledger.evaluation.report import build_report
from agentledger.evaluation.runner import (
    EvalStack,
    drive,
    eval_settings,
    open_eval_stack,
    run_case,
)
from agentledger.evaluation.sources import SuiteSource, load_suite
from bench._stack import start_dev_server

CONFIGS = {
    "tight.json": {"name": "tight", "pack": "support",
                   "overrides": {"context": {"sections": {"evidence": 150}}}},
    "generous.json": {"name": "generous", "pack": "support",
                      "overrides": {"context": {"application_limit": 20000,
                                                "sections": {"evidence": 12000}}}},
}  # fmt: skip
Times = dict[str, list[float]]


async def _eval_round(stack: EvalStack, source: SuiteSource, configs: Any, times: Times) -> None:
    rows = []
    for case in source.suite.cases:
        for config in configs:
            started = time.perf_counter()
            rows.append(await run_case(stack, source, case, config, 0))
            times[case.case_id].append(time.perf_counter() - started)
    started = time.perf_counter()
    meta = {c.name: {"source": c.source, "pack": c.pack.name,
                     "configuration_hash": c.configuration_hash} for c in configs}  # fmt: skip
    header = {"eval_id": "bench", "suite": "support", "suite_version": "1", "pack": "support",
              "ledger": "", "task_queue": stack.queue}  # fmt: skip
    cases = [c.case_id for c in source.suite.cases]
    report = build_report(header, (configs[0].name, configs[1].name), meta, rows, cases, 1)
    table(report), report.model_dump_json(), render_html(report)
    share = (time.perf_counter() - started) / len(rows)  # the report's cost, spread per run
    for case_id in cases:
        times[case_id][-len(configs) :] = [t + share for t in times[case_id][-len(configs) :]]


async def _direct_round(
    stack: EvalStack, source: SuiteSource, configs: tuple[Configuration, ...], times: Times
) -> None:
    ledger = stack.runtime.ledger
    for case in source.suite.cases:
        for config in configs:
            source.fresh_copy(ledger.engine, case)
            order = source.work_order(case, config.pack, ledger, uuid.uuid4().hex[:8])
            order = order.model_copy(update={"pack": config.pack.name})
            started = time.perf_counter()
            await drive(stack, order, f"direct-{uuid.uuid4().hex[:12]}",
                        approver=source.approver(order), approve=case.approve)  # fmt: skip
            times[case.case_id].append(time.perf_counter() - started)


async def main(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-eval-") as tmp:
        root = Path(tmp)
        for name, body in CONFIGS.items():
            (root / name).write_text(json.dumps(body))
        server = start_dev_server(root / "temporal")
        try:
            settings = Settings(data_dir=root, temporal_address=server.address)
            source = load_suite("support")
            configs = resolve_pair([root / n for n in CONFIGS], "support")
            own = eval_settings(settings, uuid.uuid4().hex[:8])
            runtime = open_eval_stack(own, configs)
            stack = EvalStack(runtime, await connect(own), issuer_for(own))
            async with runtime.worker(stack.client):
                return await _measure(stack, source, configs, rounds)
        finally:
            stop_dev_server(root / "temporal")


async def _measure(
    stack: EvalStack, source: SuiteSource, configs: tuple[Configuration, ...], rounds: int
) -> dict[str, Any]:
    warm: Times = defaultdict(list)
    await _eval_round(stack, source, configs, warm)  # warm-up: caches, first connections
    await _direct_round(stack, source, configs, warm)
    evals: Times = defaultdict(list)
    direct: Times = defaultdict(list)
    for r in range(rounds):
        if r % 2 == 0:
            await _eval_round(stack, source, configs, evals)
            await _direct_round(stack, source, configs, direct)
        else:
            await _direct_round(stack, source, configs, direct)
            await _eval_round(stack, source, configs, evals)
    per_case = {}
    print(f"{'work order':<28} {'eval ms':>9} {'direct ms':>10} {'ratio':>6}")
    for case in source.suite.cases:
        e, d = statistics.mean(evals[case.case_id]), statistics.mean(direct[case.case_id])
        per_case[case.case_id] = round(e / d, 3)
        print(f"{case.case_id:<28} {e * 1000:>9.1f} {d * 1000:>10.1f} {e / d:>5.2f}×")
    e_all = [t for ts in evals.values() for t in ts]
    d_all = [t for ts in direct.values() for t in ts]
    e_ms, d_ms = statistics.mean(e_all) * 1000, statistics.mean(d_all) * 1000
    print(f"{'all':<28} {e_ms:>9.1f} {d_ms:>10.1f} {e_ms / d_ms:>5.2f}×  (target ≤ 1.10×)")
    return {
        "eval_ms_per_run": round(e_ms, 1),
        "direct_ms_per_run": round(d_ms, 1),
        "ratio": round(e_ms / d_ms, 3),
        "per_work_order": per_case,
        "runs": len(e_all),
        "rounds": rounds,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.rounds))))
