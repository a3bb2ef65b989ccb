"""What observing costs, and whether the metrics tell the truth, on one embedded stack.

(a) the metrics projection's cost per event: a realistic stream (the events of real runs,
copied under fresh run ids to 10,000 events) appended to a fresh ledger with metrics off and on;
(b) the engine step time (``bench.engine``'s loop) with metrics off and on, interleaved;
(c) ``metrics_match_ledger``: the scrape of the metrics-on runs against counts taken from their
events in the ledger; ``replay_reemitted``: what replaying their histories added to the scrape.
Further measurements (tracing on/off) join ``MEASUREMENTS``.

    python -m bench.observe [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.app.observability.metrics import LedgerMetrics
from agentledger.app.replayer import replayer
from agentledger.domain.events import RunEvent
from bench import engine
from bench._metrics_truth import counter_deltas, ledger_counters, mismatches, scraped_counters
from bench._stack import Stack, embedded_stack

STREAM_EVENTS = 10_000
BATCH = 5
"""Events per append in the synthetic stream (a step appends a handful at a time)."""

Measurement = Callable[[Stack, int], Awaitable[dict[str, Any]]]


def _stream(events: list[RunEvent], size: int) -> list[list[RunEvent]]:
    """``events`` (whole runs) copied under fresh run ids up to ``size``, in append batches."""
    stream: list[RunEvent] = []
    copy = 0
    while len(stream) < size:
        stream += [e.model_copy(update={"run_id": f"{e.run_id}~{copy}"}) for e in events]
        copy += 1
    stream = stream[:size]
    return [stream[i : i + BATCH] for i in range(0, len(stream), BATCH)]


def _append_us_per_event(batches: list[list[RunEvent]], manifests: Ledger, observe: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp, Ledger.open(f"sqlite:///{tmp}/l.db") as ledger:
        for manifest_hash in {e.manifest_hash for batch in batches for e in batch}:
            body = manifests.get_manifest_body(manifest_hash)
            if body is not None:
                ledger.put_manifest(body)
        if observe:
            LedgerMetrics.over(ledger)
        started = time.perf_counter()
        for batch in batches:
            ledger.append(batch)
        elapsed = time.perf_counter() - started
    return elapsed * 1e6 / sum(len(b) for b in batches)


def _projection_us_per_event(batches: list[list[RunEvent]], ledger: Ledger) -> float:
    """The projection alone (what ``Ledger.append`` adds), best of five passes."""
    best = float("inf")
    for _ in range(5):
        projection = LedgerMetrics.over(ledger).projection
        ledger.observe(None)
        started = time.perf_counter()
        for batch in batches:
            projection.appended(batch, 0.001)
        best = min(best, time.perf_counter() - started)
    return best * 1e6 / sum(len(b) for b in batches)


def _run_ids(ledger: Ledger) -> set[str]:
    return {row.run_id for row in ledger.list_runs(limit=100_000)}


async def _engine_on_off(stack: Stack, runs: int) -> tuple[list[float], list[float], set[str]]:
    """Interleaved rounds with metrics off and on; the run ids of the metrics-on rounds."""
    ledger = stack.runtime.ledger
    off: list[float] = []
    on: list[float] = []
    observed: set[str] = set()
    metrics = LedgerMetrics.over(ledger)
    for round_ in range(4):  # off first in even rounds, on first in odd ones: no order bias
        for observing in (False, True) if round_ % 2 == 0 else (True, False):
            ledger.observe(metrics.projection if observing else None)
            before = _run_ids(ledger)
            timings = await engine._agentledger(stack, runs)
            (on if observing else off).extend(timings)
            if observing:
                observed |= _run_ids(ledger) - before
    ledger.observe(metrics.projection)
    stack.runtime.metrics = metrics
    return off, on, observed


async def _replay_all(client: Client, run_ids: set[str]) -> None:
    check = replayer(converter=client.data_converter, passthrough=["bench"])  # the codec's too
    for run_id in sorted(run_ids):
        async for history in client.list_workflows(f"WorkflowId = '{run_id}'").map_histories():
            await check.replay_workflow(history)


async def metrics_measurement(stack: Stack, runs: int) -> dict[str, Any]:
    off, on, observed = await _engine_on_off(stack, runs)
    ledger, metrics = stack.runtime.ledger, stack.runtime.metrics
    assert metrics is not None
    events = [e for run_id in sorted(observed) for e in ledger.read(run_id)]
    expected = ledger_counters(events, ledger)
    scraped = scraped_counters(metrics.scrape())
    wrong = mismatches(scraped, expected)
    await _replay_all(stack.client, observed)
    reemitted = sum(counter_deltas(scraped, scraped_counters(metrics.scrape())).values())
    batches = _stream(events, STREAM_EVENTS)
    off_ms, on_ms = statistics.median(off), statistics.median(on)
    append_off = _append_us_per_event(batches, ledger, observe=False)
    append_on = _append_us_per_event(batches, ledger, observe=True)
    return {
        "step_ms_metrics_off": round(off_ms, 2),
        "step_ms_metrics_on": round(on_ms, 2),
        "metrics_step_ratio": round(on_ms / off_ms, 3),
        "projection_us_per_event": round(_projection_us_per_event(batches, ledger), 2),
        "append_us_per_event_metrics_off": round(append_off, 2),
        "append_us_per_event_metrics_on": round(append_on, 2),
        "stream_events": sum(len(b) for b in batches),
        "metrics_match_ledger": not wrong,
        "metrics_mismatches": wrong[:10],
        "replay_reemitted": int(reemitted),
        "runs_observed": len(observed),
    }


MEASUREMENTS: list[Measurement] = [metrics_measurement]
"""Each measurement runs on the same stack and adds its keys to the last line's JSON (the
tracing on/off ratio is the place for the next one)."""


def _print(result: dict[str, Any]) -> None:
    for key, value in result.items():
        if not isinstance(value, list):
            print(f"{key:36}{value!s:>14}")
    print(json.dumps(result))


async def main(runs: int) -> dict[str, Any]:
    from agentledger.app.registry import register_pack

    register_pack("bench", "bench._noop_pack:PACK")
    result: dict[str, Any] = {"runs_per_round": runs}
    async with embedded_stack() as stack:
        for measurement in MEASUREMENTS:
            result.update(await measurement(stack, runs))
    _print(result)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
