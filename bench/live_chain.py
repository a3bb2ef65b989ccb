"""Fallback runs and their cost, and a run decided by a real local model, for ``bench.live``.

Support runs are decided by a priced primary provider, which has a priced backup in its frozen
chain. Both are local chat servers. The primary fails half of the calls, alternating 429 (with
``retry-after``) and 500; each failure moves the call down the chain within the same attempt.
Afterwards three totals are compared:

- each call's recorded cost, against its tokens × its route's price (``Decimal``, exact);
- each run's ``run_completed`` total, against the sum of its calls' costs;
- the metrics' ``agentledger_model_cost_total``, against that sum. The metrics are a float
  counter, so they must agree to 1e-9.

The local model is llama.cpp serving SmolLM2-135M (``bench.providers.llama_peer``). It streams,
and it decides one governed support run end to end. It is tiny and often wrong, so the run may
end failed; what it answered, if anything, must equal its stream.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from agentledger.activities.models import (
    ConfiguredProvider,
    ProviderClient,
    ProviderConfig,
    model_clients,
)
from agentledger.app.devserver import stop_dev_server
from agentledger.app.observability.metrics import LedgerMetrics
from agentledger.domain import events as ev
from agentledger.domain.model_profile import ModelRoute, Price
from agentledger.domain.workorder import Budget
from bench._metrics_truth import scraped_counters
from bench._stack import start_dev_server
from bench.providers.chat_server import ChatServer
from bench.providers.llama_peer import LlamaPeer
from bench.providers.recorded import decision, error
from bench.providers.runs import provider_harness, run_to_end

PRIMARY = Price(
    currency="EUR",
    input_per_million=Decimal("2.50"),
    cached_input_per_million=Decimal("1.25"),
    output_per_million=Decimal("10.00"),
)
BACKUP = Price(
    currency="EUR",
    input_per_million=Decimal("0.15"),
    cached_input_per_million=Decimal("0.075"),
    output_per_million=Decimal("0.60"),
)


@dataclass
class Chain:
    runs: int = 0
    completed: int = 0
    calls_down_the_chain: int = 0
    cost_matches_ledger: bool = True
    recorded_cost: Decimal = Decimal(0)
    metrics_cost: float = 0.0


async def fallback_runs(n: int) -> Chain:
    primary, backup = ChatServer(), ChatServer()
    clients = ProviderClient()
    models = {
        "primary": ConfiguredProvider(
            "primary", ProviderConfig(base_url=primary.url, models=("big",)), clients
        ),
        "backup": ConfiguredProvider(
            "backup", ProviderConfig(base_url=backup.url, models=("small",)), clients
        ),
    }
    route = ModelRoute(provider="backup", model="small", price=BACKUP)
    profile = models["primary"].profile("big")
    profile = profile.model_copy(update={"price": PRIMARY, "fallbacks": (route,)})
    found = Chain()
    try:
        with tempfile.TemporaryDirectory(prefix="agentledger-chain-") as tmp:
            work = Path(tmp)
            dev = start_dev_server(work)
            try:
                async with provider_harness(dev, work, profile, models) as harness:
                    metrics = LedgerMetrics.over(harness.runtime.ledger)
                    for i in range(n):
                        _script(primary, backup, failing=i % 2 == 0)
                        _tally(found, await run_to_end(harness))
                    scraped = scraped_counters(metrics.scrape())
            finally:
                stop_dev_server(work)
    finally:
        primary.close()
        backup.close()
        clients.close()
    found.metrics_cost = sum(
        v for (name, _), v in scraped.items() if name.startswith("agentledger_model_cost")
    )
    found.cost_matches_ledger = (
        found.cost_matches_ledger and abs(found.metrics_cost - float(found.recorded_cost)) < 1e-9
    )
    return found


def _script(primary: ChatServer, backup: ChatServer, *, failing: bool) -> None:
    """One run's two calls: the first fails on the primary (429 or 500 by turns) and is
    answered by the backup; the second is the primary's."""
    first = (
        error(429, "Rate limit reached", **{"retry-after": "1"}) if failing else error(500, "boom")
    )
    primary.script(first, decision({"type": "answer", "answer": "Please tell me more."}))
    backup.script(decision({"type": "proceed_to_answer"}))


def _tally(found: Chain, events: list[ev.RunEvent]) -> None:
    found.runs += 1
    end = events[-1]
    found.completed += isinstance(end, ev.RunCompleted)
    called = [e for e in events if isinstance(e, ev.ModelCalled)]
    found.calls_down_the_chain += sum(c.route == 1 for c in called)
    for call in called:
        price = PRIMARY if call.route == 0 else BACKUP
        expected = price.cost(call.input_tokens, call.cached_tokens, call.output_tokens)
        found.cost_matches_ledger &= call.cost == expected
    total = sum((c.cost for c in called if c.cost is not None), Decimal(0))
    found.recorded_cost += total
    found.cost_matches_ledger &= isinstance(end, ev.RunCompleted) and end.total_cost == total


async def local_model_run() -> tuple[str, bool]:
    """How the llama.cpp-decided run ended, and whether its answer (if any) equals its stream."""
    with LlamaPeer() as peer, tempfile.TemporaryDirectory(prefix="agentledger-llama-") as tmp:
        work = Path(tmp)
        dev = start_dev_server(work)
        try:
            profile = peer.profile(stream=True)
            async with provider_harness(dev, work, profile, model_clients()) as harness:
                budget = Budget(steps=4, tool_calls=3, tokens=60_000)
                events = await run_to_end(harness, budget=budget, approve=False, timeout=900)
                ledger = harness.runtime.ledger
                run = ledger.get_run(events[0].run_id)
                stream = ledger.read_stream(events[0].run_id)
        finally:
            stop_dev_server(work)
    answer = run.answer if run is not None else None
    return events[-1].kind, not answer or stream.text == answer
