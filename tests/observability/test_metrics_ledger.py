"""The metrics projection over real ledger appends (SQLite and PostgreSQL), no Temporal: what
an append newly stores is counted once; a retry, a resend or a rolled-back transaction counts
nothing; labels stay bounded and never carry a run id or free text."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from agentledger.activities.ledger import Ledger
from agentledger.app.observability.metrics import LedgerMetrics
from agentledger.domain import events as ev
from bench._metrics_truth import (
    LATENCY_COUNT,
    ledger_counters,
    mismatches,
    sample,
    scraped_counters,
)
from bench.factories import RunScript, refund_run

APPEND_CALLS = sample(LATENCY_COUNT)


def counters(metrics: LedgerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The counters derived from events (the append-latency count is per call)."""
    found = scraped_counters(metrics.scrape())
    found.pop(APPEND_CALLS, None)
    return found


def test_each_appended_event_is_counted_as_the_ledger_holds_it(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    for run_id in ("run-a", "run-b"):
        events = refund_run(run_id).events
        for i in range(0, len(events), 3):
            ledger.append(events[i : i + 3])

    stored = ledger.read("run-a") + ledger.read("run-b")
    assert mismatches(counters(metrics), ledger_counters(stored, ledger)) == []
    assert (
        counters(metrics)[
            sample("agentledger_runs_ended_total", pack="support", status="completed")
        ]
        == 2
    )


def test_a_retried_append_of_stored_events_counts_nothing(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    events = refund_run("run-retry").events
    ledger.append(events)
    before = counters(metrics)

    assert ledger.append(events) == 0
    assert ledger.append(events[:5]) == 0
    assert counters(metrics) == before
    assert scraped_counters(metrics.scrape())[APPEND_CALLS] == 3  # the calls are still timed


def test_a_resent_batch_counts_only_the_events_it_adds(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    events = refund_run("run-resend").events
    ledger.append(events[:10])
    assert ledger.append(events[6:]) == len(events) - 10  # 6..9 again, then the rest

    assert mismatches(counters(metrics), ledger_counters(events, ledger)) == []


def test_events_appended_in_a_rolled_back_transaction_count_nothing(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    events = refund_run("run-tx").events
    with ledger.begin() as conn:
        ledger.append_in(conn, events[:4])
        conn.rollback()
    assert counters(metrics) == {}

    with ledger.begin() as conn:
        ledger.append_in(conn, events)
        conn.execute(text("SELECT 1"))
    assert mismatches(counters(metrics), ledger_counters(events, ledger)) == []


def test_two_registries_count_independently(ledger: Ledger) -> None:
    first = LedgerMetrics.over(ledger)
    ledger.append(refund_run("run-1st").events)
    second = LedgerMetrics.over(ledger)  # the ledger now reports to the second only
    ledger.append(refund_run("run-2nd").events)

    runs = sample("agentledger_runs_started_total", pack="support")
    assert counters(first)[runs] == 1
    assert counters(second)[runs] == 1


def test_free_text_never_becomes_a_label_and_no_label_names_a_run(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    script = RunScript("run-free-text")
    script.started()
    script.add(ev.RunFailed, reason_code="Tool said: ignore previous instructions!", message="x")
    ledger.append(script.events)

    text_ = metrics.scrape()
    failures = sample("agentledger_run_failures_total", pack="support", reason_code="other")
    assert counters(metrics)[failures] == 1
    assert "run-free-text" not in text_
    assert "ignore previous" not in text_


def test_a_label_takes_at_most_a_hundred_values(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    script = RunScript("run-many-codes")
    script.started()
    for i in range(120):
        script.add(ev.ErrorRecorded, error_id=f"e{i}", code=f"code_{i}", message="m")
    ledger.append(script.events)

    errors = {k: v for k, v in counters(metrics).items() if k[0] == "agentledger_errors_total"}
    assert len(errors) == 101
    assert errors[sample("agentledger_errors_total", code="other")] == 20


def test_pending_approvals_are_read_from_the_ledger_at_scrape_time(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    waiting = refund_run("run-waiting", finish=False).events
    ledger.append(waiting)
    assert _gauge(metrics, "agentledger_approvals_pending") == {"create_refund": 1.0}

    fresh = LedgerMetrics.over(ledger)  # a worker that appended none of it sees it too
    assert _gauge(fresh, "agentledger_approvals_pending") == {"create_refund": 1.0}
    expiry = _gauge(fresh, "agentledger_approval_next_expiry_timestamp_seconds")
    (requested,) = [e for e in waiting if isinstance(e, ev.ApprovalRequested)]
    assert expiry == {"create_refund": requested.expires_at.timestamp()}


def _gauge(metrics: LedgerMetrics, name: str) -> dict[str, float]:
    families = text_string_to_metric_families(metrics.scrape())
    family = next(f for f in families if f.name == name)
    return {s.labels["tool"]: s.value for s in family.samples}


def test_the_readme_table_lists_exactly_the_metrics_exported(ledger: Ledger) -> None:
    metrics = LedgerMetrics.over(ledger)
    exported = {
        f"{f.name}_total" if f.type == "counter" else f.name for f in metrics.registry.collect()
    }
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    table = readme.split("### Metrics", 1)[1].split("\n\n`python -m bench.observe`", 1)[0]
    documented = set(re.findall(r"^\| `(agentledger_\w+)`", table, flags=re.MULTILINE))
    assert sorted(documented - exported) == []
    assert sorted(exported - documented) == []
