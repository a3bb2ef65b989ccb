"""Live answers: time to first token through the runtime, and streams across worker kills.

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

    python -m bench.live [--ttft-runs 10] [--kills 3] [--first-token-ms 300]

Target: ``ttft_vs_direct`` ≤ 1.5 quiet; ``stream_lost_or_duplicated_chunks`` 0;
``answer_equals_winning_stream`` true. Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from bench.live_chain import fallback_runs, local_model_run
from bench.live_runs import kill_runs, ttft_pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ttft-runs", type=int, default=10)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--first-token-ms", type=int, default=300)
    parser.add_argument("--fallback-runs", type=int, default=10)
    parser.add_argument("--no-local-model", action="store_true", help="skip the llama.cpp run")
    args = parser.parse_args()
    started = time.perf_counter()
    first_token = args.first_token_ms / 1000
    direct, through, equal_ttft = asyncio.run(ttft_pairs(args.ttft_runs, first_token))
    kills = asyncio.run(kill_runs(args.kills))
    chain = asyncio.run(fallback_runs(args.fallback_runs))
    local = None if args.no_local_model else asyncio.run(local_model_run())
    ratio = statistics.median(through) / statistics.median(direct)
    figures: dict[str, Any] = {
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
