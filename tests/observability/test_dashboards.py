"""The Grafana dashboard and the Prometheus configuration ship valid: the dashboard against a JSON
schema of what Grafana needs from it, the scrape config and alert rules through ``promtool``
(and the rules' unit tests), and every metric they name is one agentledger or the Temporal SDK
actually exports, read from a live scrape of a worker that ran the refund scenario."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from agentledger.app.devserver import DevServer
from agentledger.app.observability.metrics import LedgerMetrics, temporal_runtime
from bench._stack import open_stack
from bench.harness import Harness

ROOT = Path(__file__).parents[2]
DASHBOARD = ROOT / "infra" / "grafana" / "agentledger.json"
PROMETHEUS = ROOT / "infra" / "prometheus"

_TARGET = {
    "type": "object",
    "required": ["refId", "expr", "datasource"],
    "properties": {
        "refId": {"type": "string", "pattern": "^[A-Z]$"},
        "expr": {"type": "string", "minLength": 1},
        "legendFormat": {"type": "string"},
        "datasource": {"$ref": "#/$defs/datasource"},
    },
}
_GRID = {
    "type": "object",
    "required": ["h", "w", "x", "y"],
    "properties": {
        "h": {"type": "integer", "minimum": 1},
        "w": {"type": "integer", "minimum": 1, "maximum": 24},
        "x": {"type": "integer", "minimum": 0, "maximum": 23},
        "y": {"type": "integer", "minimum": 0},
    },
}
DASHBOARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        "datasource": {
            "type": "object",
            "required": ["type", "uid"],
            "properties": {"type": {"const": "prometheus"}, "uid": {"const": "${datasource}"}},
        },
        "row": {
            "type": "object",
            "required": ["id", "type", "title", "gridPos", "panels"],
            "properties": {"type": {"const": "row"}, "gridPos": _GRID},
        },
        "panel": {
            "type": "object",
            "required": ["id", "type", "title", "description", "gridPos", "datasource", "targets"],
            "properties": {
                "id": {"type": "integer"},
                "type": {"enum": ["timeseries", "stat", "gauge", "bargauge", "table"]},
                "title": {"type": "string", "minLength": 1},
                "description": {"type": "string", "minLength": 1},
                "gridPos": _GRID,
                "datasource": {"$ref": "#/$defs/datasource"},
                "fieldConfig": {"type": "object", "required": ["defaults"]},
                "targets": {"type": "array", "minItems": 1, "items": _TARGET},
            },
        },
    },
    "type": "object",
    "required": ["uid", "title", "schemaVersion", "panels", "templating", "time"],
    "properties": {
        "uid": {"type": "string", "pattern": "^[a-z0-9-]{1,40}$"},
        "schemaVersion": {"type": "integer", "minimum": 36},
        "templating": {
            "type": "object",
            "required": ["list"],
            "properties": {"list": {"contains": {"properties": {"name": {"const": "datasource"}}}}},
        },
        "panels": {
            "type": "array",
            "minItems": 1,
            "items": {
                "if": {"properties": {"type": {"const": "row"}}},
                "then": {"$ref": "#/$defs/row"},
                "else": {"$ref": "#/$defs/panel"},
            },
        },
    },
}

_METRIC = re.compile(r"\b((?:agentledger|temporal)_[a-z0-9_]+)\b")
# What the issue asks the dashboard to show, each by a metric that carries it.
SHOWN = {
    "runs": "agentledger_runs_ended_total",
    "approvals pending": "agentledger_approvals_pending",
    "approval wait": "agentledger_approval_wait_seconds_bucket",
    "denials": "agentledger_tool_denials_total",
    "tokens": "agentledger_model_tokens_total",
    "worker slots": "temporal_worker_task_slots_available",
    "ledger latency": "agentledger_ledger_append_seconds_bucket",
}


def dashboard() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return found


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]


def rule_exprs() -> list[str]:
    rules = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())
    return [r["expr"] for group in rules["groups"] for r in group["rules"]]


def names_in(exprs: list[str]) -> set[str]:
    return {name for expr in exprs for name in _METRIC.findall(expr)}


def test_the_dashboard_is_a_grafana_dashboard_of_prometheus_panels() -> None:
    jsonschema.validate(dashboard(), DASHBOARD_SCHEMA)
    ids = [p["id"] for p in dashboard()["panels"]]
    assert len(ids) == len(set(ids))


def test_no_two_panels_overlap_and_every_panel_fits_the_grid() -> None:
    def cells(panel: dict[str, Any]) -> set[tuple[int, int]]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24, panel["title"]
        return {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }

    for a, b in combinations(dashboard()["panels"], 2):
        assert not cells(a) & cells(b), (a["title"], b["title"])


def test_the_dashboard_shows_what_an_operator_asked_for() -> None:
    named = names_in(dashboard_exprs())
    assert {what: metric in named for what, metric in SHOWN.items()} == dict.fromkeys(SHOWN, True)


def test_every_query_groups_by_bounded_labels_only() -> None:
    # A run id as a label would make one series per run; the metrics never carry one.
    for expr in dashboard_exprs() + rule_exprs():
        assert "run_id" not in expr and "operation_id" not in expr, expr


# ------------------------------------------------------------------ promtool


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing (Debian package prometheus; .ci/run installs it)")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["check", "config", "prometheus.yml"],
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts_test.yml"],
    ],
    ids=lambda a: " ".join(a),
)
def test_promtool_accepts_the_scrape_config_and_the_alert_rules(args: list[str]) -> None:
    done = subprocess.run(
        [promtool(), *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------ names on a live scrape


def scraped_names(text: str) -> set[str]:
    """Every series name a scrape can hold: its samples, and for a family with no sample yet
    (a labelled counter nothing incremented) the names its type implies."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names |= {s.name for s in family.samples}
        names |= {family.name + x for x in suffixes.get(family.type, ("",))}
    return names


@pytest.fixture
async def scrape(temporal_server: DevServer, tmp_path: Path) -> Iterator[str]:
    """A worker with agentledger's metrics and the SDK's on one scrape, after a refund run."""
    runtime, sdk_address = temporal_runtime()
    queue = f"m-{uuid.uuid4().hex}"
    stack = await open_stack(tmp_path, temporal_server.address, None, queue)
    metrics = LedgerMetrics.over(stack.runtime.ledger, sdk_address=sdk_address)
    client = await Client.connect(
        temporal_server.address, data_converter=pydantic_data_converter, runtime=runtime
    )
    h = Harness(stack.runtime, client, stack.settings)
    async with stack.runtime.worker(client):
        run_id = await h.start("Can I get a refund for order ord_4821? It arrived late.")
        (approval_id,) = (await h.until_approval_or_end(run_id)).pending_approvals
        await h.decide(run_id, approval_id, "ops_lead_1")
        await h.finish(run_id)
        with urllib.request.urlopen(f"http://{sdk_address}/metrics", timeout=10) as sdk:
            assert sdk.status == 200
        yield metrics.scrape()
    stack.runtime.ledger.engine.dispose()


@pytest.mark.temporal
async def test_every_metric_the_dashboard_and_the_rules_name_is_exported(scrape: str) -> None:
    exported = scraped_names(scrape)
    named = names_in(dashboard_exprs() + rule_exprs())

    assert named - exported == set()
    assert any(n.startswith("temporal_") for n in named)
