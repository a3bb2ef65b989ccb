"""Every panel of the Grafana dashboard, evaluated by Prometheus's own engine (``promtool test
rules``) over a sample scraped from a fleet of two workers.

Each worker exports the counters and histograms of what *it* appended, so a panel sums them into
the fleet's totals; the pending-approval gauges are read from the shared ledger at scrape time,
so every worker reports the fleet's value and a panel must not add them up (``max``/``min``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.observability.test_dashboards import dashboard_exprs, panels, promtool

WORKERS = ("w1", "w2")
JOB = "agentledger-worker"
PENDING = 3
"""Approvals pending in the shared ledger: what each worker's scrape says."""
EXPIRES_AT = 5_000
EVAL_AT = 10 * 60
LEDGER_WIDE = {
    "agentledger_approvals_pending",
    "agentledger_approval_next_expiry_timestamp_seconds",
}
_NAME = re.compile(r"\b((?:agentledger|temporal)_[a-z0-9_]+)\b")
_BY = re.compile(r"\bby \(([^)]*)\)")


def as_queried(expr: str) -> str:
    """The panel's query as Grafana sends it for this job over a short range."""
    return expr.replace("$job", JOB).replace("$__rate_interval", "2m")


def grouping_labels(metric: str) -> list[str]:
    """Every label a panel groups this metric by (given a value in the sample)."""
    labels = {
        label.strip()
        for expr in dashboard_exprs()
        if metric in _NAME.findall(expr)
        for group in _BY.findall(expr)
        for label in group.split(",")
    }
    return sorted(labels - {"le", "instance"})


def values_of(metric: str, worker: int) -> str:
    """Counters and histograms grow at each worker's own pace; the ledger-wide gauges are the
    same on every worker; a worker's own gauge is its own."""
    if metric == "agentledger_approvals_pending":
        return f"{PENDING}x30"
    if metric == "agentledger_approval_next_expiry_timestamp_seconds":
        return f"{EXPIRES_AT}x30"
    if metric.endswith(("_total", "_bucket", "_count", "_sum")):
        return f"0+{worker + 1}x30"
    return f"{10 * (worker + 1)}x30"


def fleet_sample() -> list[dict[str, str]]:
    series = []
    for metric in sorted({n for e in dashboard_exprs() for n in _NAME.findall(e)}):
        fixed = {label: "a" for label in grouping_labels(metric)}
        buckets = ("0.1", "1", "+Inf") if metric.endswith("_bucket") else (None,)
        for worker, instance in enumerate(WORKERS):
            for le in buckets:
                labels = {"job": JOB, "instance": instance, **fixed}
                if le is not None:
                    labels["le"] = le
                text = ", ".join(f'{k}="{v}"' for k, v in labels.items())
                series.append(
                    {"series": f"{metric}{{{text}}}", "values": values_of(metric, worker)}
                )
    return series


def panel(title: str) -> dict[str, Any]:
    return next(p for p in panels() if p["title"] == title)


def expr_tests() -> list[dict[str, Any]]:
    """Each panel's every query returns data; the ledger-wide gauges show the fleet's value
    once, not once per worker."""
    returns_data = [
        {"expr": f"absent({as_queried(t['expr'])})", "eval_time": f"{EVAL_AT}s", "exp_samples": []}
        for p in panels()
        for t in p["targets"]
    ]
    ((pending,),) = [[t["expr"] for t in panel("Approvals pending")["targets"]]]
    ((expiry,),) = [[t["expr"] for t in panel("Soonest expiry")["targets"]]]
    exact = [
        {
            "expr": as_queried(pending),
            "eval_time": f"{EVAL_AT}s",
            "exp_samples": [{"labels": '{tool="a"}', "value": PENDING}],
        },
        {
            "expr": as_queried(expiry),
            "eval_time": f"{EVAL_AT}s",
            "exp_samples": [{"labels": '{tool="a"}', "value": EXPIRES_AT - EVAL_AT}],
        },
    ]
    return returns_data + exact


def test_every_panel_answers_for_a_fleet_and_pending_approvals_are_counted_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "none.yml").write_text("groups: []\n")
    suite = {
        "rule_files": ["none.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": "1m", "input_series": fleet_sample(), "promql_expr_test": expr_tests()}
        ],
    }
    (tmp_path / "panels_test.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    done = subprocess.run(
        [promtool(), "test", "rules", "panels_test.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_pending_approvals_panels_never_add_up_the_workers_reports() -> None:
    for expr in dashboard_exprs():
        if set(_NAME.findall(expr)) & LEDGER_WIDE:
            assert not re.match(r"\s*sum\b", expr), json.dumps(expr)
