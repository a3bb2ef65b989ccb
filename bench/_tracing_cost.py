"""Engine step time with tracing on vs off, measured side by side on one dev server.

The same loop as ``bench.engine`` (the no-op pack: 20 tool steps a run, scripted model, ledger
appends). Each mode runs in a process of its own, alternating off/on round after round: an
OpenTelemetry provider is installed once per process, and once installed it traces even a
client without the interceptor, so "off" must be a process that never installed one. "On" is
``AGENTLEDGER_TRACING``'s configuration with spans exported in batches as OTLP's are (to memory:
no collector runs here); "sync" exports each span as it ends, in the worker's own threads (the
dearer case, as the tests configure it).

    from bench._tracing_cost import tracing_cost
    figures = asyncio.run(tracing_cost(runs=5, rounds=3))

    python -m bench._tracing_cost [--runs 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from agentledger.app.devserver import stop_dev_server
from bench._stack import open_stack, start_dev_server
from bench.engine import STEPS, _agentledger
from bench.harness import Harness

MODES = ("off", "on", "sync")


async def tracing_cost(runs: int = 5, rounds: int = 3) -> dict[str, Any]:
    """ms per step with tracing off, on (batched) and sync (medians over ``rounds`` × ``runs``
    runs), the ratios to off (target ≤ 1.05) and the spans one step exports."""
    timings: dict[str, list[float]] = {mode: [] for mode in MODES}
    spans = 0
    with tempfile.TemporaryDirectory(prefix="agentledger-tracing-") as tmp:
        server = start_dev_server(Path(tmp))
        try:
            for i in range(rounds):
                for mode in MODES[i % 3 :] + MODES[: i % 3]:  # each mode leads a round
                    child = await _child(mode, server.address, runs)
                    timings[mode] += child["ms"]
                    spans = max(spans, child["spans"])
        finally:
            stop_dev_server(Path(tmp))
    off, on, sync = (statistics.median(timings[mode]) for mode in MODES)
    return {
        "step_ms_tracing_off": round(off, 2),
        "step_ms_tracing_on": round(on, 2),
        "step_ms_tracing_sync": round(sync, 2),
        "tracing_ratio": round(on / off, 3),
        "tracing_sync_ratio": round(sync / off, 3),
        "spans_per_step": round(spans / ((runs + 1) * STEPS), 2),
        "runs": runs * rounds,
        "steps_per_run": STEPS,
    }


async def _child(mode: str, address: str, runs: int) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._tracing_cost",
        "--child",
        mode,
        "--address",
        address,
        "--runs",
        str(runs),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the tracing-{mode} process exited {process.returncode}")
    found: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return found


async def _measure(mode: str, address: str, runs: int) -> dict[str, Any]:
    """One mode's runs, in this process (the child's side)."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from temporalio.client import Client

    from agentledger.app.observability import tracing
    from agentledger.app.registry import register_pack

    register_pack("bench", "bench._noop_pack:PACK")  # before seeding: its principal
    exporter = InMemorySpanExporter()
    if mode != "off":
        tracing.configure(exporter, batch=mode == "on")
    with tempfile.TemporaryDirectory(prefix=f"agentledger-tracing-{mode}-") as tmp:
        stack = await open_stack(Path(tmp), address, None, f"tc-{mode}-{uuid.uuid4().hex[:6]}")
        config = stack.client.config()
        config["interceptors"] = tracing.interceptors(mode != "off")
        traced = Harness(stack.runtime, Client(**config), stack.settings)
        ms = await _agentledger(traced, runs)
        stack.runtime.ledger.engine.dispose()
    if mode != "off":
        tracing.shutdown()  # the batch still queued is exported, and counted
    return {"ms": ms, "spans": len(exporter.get_finished_spans())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--address")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_measure(args.child, args.address, args.runs))))
    else:
        print(json.dumps(asyncio.run(tracing_cost(args.runs, args.rounds))))


if __name__ == "__main__":
    main()
