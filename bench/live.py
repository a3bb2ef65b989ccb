"""Live models at the wire: the provider test cases, time to first token through the runtime,
streams across worker kills, fallback chains and their cost, and a real local model.

The provider is the local chat server (``bench.providers.chat_server``). It speaks the
chat-completions wire, streamed as server-sent chunks, and its first byte waits
``--first-token-ms`` to stand in for a model's thinking.

- **ttft.** ``--ttft-runs`` answers are each asked straight from that server with the ``openai``
  SDK: the time from sending the request to the first text delta. The same answers are then given
  through a support run on an embedded stack: a worker with the provider configured to stream,
  the API on loopback, and the run's customer following ``GET /api/runs/{id}/stream``. There the
  time runs from the answer request's arrival at the provider to the first ``token`` event at the
  customer's SSE client. The two alternate, run by run.
- **kills.** ``--kills`` runs whose worker is a subprocess SIGKILLed once part of the answer is in
  the stream; the restarted worker's second attempt answers in other words. A follower reads
  along. After its last ``reset``, its tokens must join, offset after offset, into exactly the
  answer the run recorded: characters missing are lost, characters sent twice are duplicated.

- **wire cases.** The provider tests that speak each protocol at the wire against the local
  server (``tests/providers``: replies, errors, native protocols, streams, fallbacks, request
  rendering), run with pytest; each case is counted under the protocol it names (Chat
  Completions, spoken by the ``openai`` and ``openai_compatible`` kinds, unless it names another).
- **fallbacks and cost.** See ``bench.live_chain``; and one support run decided by llama.cpp
  (SmolLM2-135M, streaming).

    python -m bench.live [--ttft-runs 10] [--kills 3] [--first-token-ms 300]
                         [--fallback-runs 10] [--no-local-model]

Target: ``ttft_vs_direct`` ≤ 1.5 quiet; ``stream_lost_or_duplicated_chunks`` 0;
``answer_equals_winning_stream`` true; ``fallback_runs_completed`` = ``fallback_runs``;
``cost_matches_ledger`` true; every wire case passed. Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench.live_chain import fallback_runs, local_model_run
from bench.live_runs import kill_runs, ttft_pairs

WIRE_TESTS = (
    "test_replies_and_errors.py",
    "test_native_protocols.py",
    "test_streaming.py",
    "test_fallbacks.py",
    "test_request_rendering.py",
)
ROOT = Path(__file__).resolve().parents[1]


def wire_cases() -> tuple[dict[str, int], dict[str, int]]:
    """(cases, passed) per protocol, from a pytest run of the wire tests."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "wire.xml"
        files = [str(ROOT / "tests" / "providers" / name) for name in WIRE_TESTS]
        subprocess.run(
            [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider",
             f"--junitxml={report}"],
            cwd=ROOT, capture_output=True, check=False,
        )  # fmt: skip
        cases = ET.parse(report).getroot().iter("testcase")
        total: dict[str, int] = {}
        passed: dict[str, int] = {}
        for case in cases:
            name = case.get("name", "")
            kind = next((k for k in ("anthropic", "responses") if k in name), "chat_completions")
            total[kind] = total.get(kind, 0) + 1
            failed = any(child.tag in ("failure", "error", "skipped") for child in case)
            passed[kind] = passed.get(kind, 0) + (not failed)
    return total, passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ttft-runs", type=int, default=10)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--first-token-ms", type=int, default=300)
    parser.add_argument("--fallback-runs", type=int, default=10)
    parser.add_argument("--no-local-model", action="store_true", help="skip the llama.cpp run")
    args = parser.parse_args()
    started = time.perf_counter()
    wire_total, wire_passed = wire_cases()
    first_token = args.first_token_ms / 1000
    direct, through, equal_ttft = asyncio.run(ttft_pairs(args.ttft_runs, first_token))
    kills = asyncio.run(kill_runs(args.kills))
    chain = asyncio.run(fallback_runs(args.fallback_runs))
    local = None if args.no_local_model else asyncio.run(local_model_run())
    ratio = statistics.median(through) / statistics.median(direct)
    figures: dict[str, Any] = {
        "wire_cases_total": wire_total,
        "wire_cases_passed": wire_passed,
        "ttft_direct_ms_p50": round(statistics.median(direct) * 1000, 1),
        "ttft_through_runtime_ms_p50": round(statistics.median(through) * 1000, 1),
        "ttft_through_runtime_ms_max": round(max(through) * 1000, 1),
        "ttft_vs_direct": round(ratio, 3),
        "killed_runs": kills.runs,
        "worker_kills": kills.kills,
        "resets_seen": kills.resets,
        "stream_lost_or_duplicated_chunks": kills.lost + kills.duplicated,
        "answer_equals_winning_stream": equal_ttft and kills.equal and (local is None or local[1]),
        "fallback_runs": chain.runs,
        "fallback_runs_completed": chain.completed,
        "calls_down_the_chain": chain.calls_down_the_chain,
        "cost_matches_ledger": chain.cost_matches_ledger,
        "recorded_cost_eur": str(chain.recorded_cost),
        "local_model_run_ended": local[0] if local else None,
        "local_model_run_completed": local[0] == "run_completed" if local else None,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"wire cases by protocol: {wire_passed} passed of {wire_total}")
    print(f"time to first token, {args.ttft_runs} answers ({args.first_token_ms} ms to 1st byte):")
    print(f"  straight from the provider (openai SDK)  p50 {figures['ttft_direct_ms_p50']} ms")
    print(
        f"  at the customer's SSE client, via a run  p50 "
        f"{figures['ttft_through_runtime_ms_p50']} ms  ({ratio:.2f}×, target ≤ 1.5)"
    )
    print(
        f"{kills.runs} runs, worker killed mid-answer {kills.kills}×: {kills.resets} resets "
        f"told, {kills.lost} characters lost, {kills.duplicated} duplicated; every recorded "
        f"answer equals its winning stream: {figures['answer_equals_winning_stream']}"
    )
    print(
        f"{chain.runs} runs with the primary failing half its calls (429/500 by turns): "
        f"{chain.completed} completed, {chain.calls_down_the_chain} calls answered down the "
        f"chain; cost {chain.recorded_cost} EUR recorded, {chain.metrics_cost!r} in the metrics, "
        f"matching tokens × price: {chain.cost_matches_ledger}"
    )
    if local is not None:
        print(f"llama.cpp (SmolLM2-135M, streaming) decided a support run: it ended {local[0]}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
