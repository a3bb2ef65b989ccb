"""``/metrics`` after real runs on a real Temporal server matches the ledger, counter for
counter; replaying histories (the runs' own and the recorded ones) changes no counter."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from agentledger.app.observability.metrics import LedgerMetrics, serve_metrics
from agentledger.app.replayer import replayer
from bench._metrics_truth import ledger_counters, mismatches, sample, scraped_counters
from bench._stack import free_port
from tests._temporal import Harness

REQUEST = "Can I get a refund for order ord_4821? It arrived late."
HISTORIES = Path(__file__).parents[1] / "replay" / "histories"


@pytest.fixture
def metrics(harness: Harness) -> Iterator[tuple[LedgerMetrics, str]]:
    observed = LedgerMetrics.over(harness.runtime.ledger)
    port = free_port()
    server = serve_metrics(observed, port, "127.0.0.1")
    yield observed, f"http://127.0.0.1:{port}/metrics"
    server.shutdown()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        body: bytes = reply.read()
    return body.decode()


async def refund(h: Harness, *, approve: bool, url: str) -> str:
    run_id = await h.start(REQUEST)
    state = await h.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    await h.in_inbox(run_id)
    waiting = scraped_gauge(scrape(url), "agentledger_approvals_pending")
    assert waiting == {"create_refund": 1.0}
    await h.decide(run_id, approval_id, "ops_lead_1", approve=approve, reason="no")
    await h.finish(run_id)
    return run_id


def scraped_gauge(text: str, name: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    found = next((f for f in text_string_to_metric_families(text) if f.name == name), None)
    return {} if found is None else {s.labels["tool"]: s.value for s in found.samples}


async def test_metrics_after_an_approved_and_a_rejected_refund_match_the_ledger(
    harness: Harness, metrics: tuple[LedgerMetrics, str]
) -> None:
    _, url = metrics
    # Rejected first: once refunded, the order asks for no second approval.
    runs = [
        await refund(harness, approve=False, url=url),
        await refund(harness, approve=True, url=url),
    ]

    ledger = harness.runtime.ledger
    events = [e for run_id in runs for e in ledger.read(run_id)]
    scraped = scraped_counters(scrape(url))
    assert mismatches(scraped, ledger_counters(events, ledger)) == []
    for decision in ("granted", "rejected"):
        assert scraped[sample("agentledger_approvals_decided_total", decision=decision)] == 1
    assert scraped[sample("agentledger_runs_started_total", pack="support")] == 2
    assert scraped_gauge(scrape(url), "agentledger_approvals_pending") == {}
    assert not any(run_id in scrape(url) for run_id in runs)


async def test_replaying_histories_changes_no_counter(
    harness: Harness, metrics: tuple[LedgerMetrics, str]
) -> None:
    _, url = metrics
    run_id = await refund(harness, approve=True, url=url)
    before = scrape(url)
    assert scraped_counters(before)

    check = replayer(converter=harness.client.data_converter)  # the payload codec's too
    own = await harness.client.get_workflow_handle(run_id).fetch_history()
    assert (await check.replay_workflow(own, raise_on_replay_failure=False)).replay_failure is None
    for path in sorted(HISTORIES.glob("*.json")):
        history = WorkflowHistory.from_json(path.stem, path.read_text())
        await check.replay_workflow(history, raise_on_replay_failure=False)

    assert scraped_counters(scrape(url)) == scraped_counters(before)
