"""`agentledger eval` as a user runs it: two support configurations on real runs, compared, every
figure traced back to runs in the eval's ledger and the manifests they froze."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentledger.app.devserver import DevServer
from agentledger.domain.events import RunStarted
from agentledger.evaluation import EvalReport
from agentledger.packs.support.evaluation import SUITE_FILE
from tests.e2e.test_cli import embedded_ledger

CLI = [sys.executable, "-m", "agentledger.cli"]
TIGHT = """name = "tight-context"
pack = "support"
[overrides.context.sections]
evidence = 150
"""
GENEROUS = {
    "name": "generous-context",
    "pack": "support",
    "overrides": {"context": {"application_limit": 20000, "sections": {"evidence": 12000}}},
}
EVIDENCE = {"tight-context": 150, "generous-context": 12000}


def _env(data_dir: Path, temporal_address: str) -> dict[str, str]:
    env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(data_dir)}
    env["AGENTLEDGER_TEMPORAL_ADDRESS"] = temporal_address
    env.pop("AGENTLEDGER_DATABASE_URL", None)
    return env


def _suite(tmp_path: Path, keep: tuple[str, ...], **changes: Any) -> Path:
    """The shipped support suite with only the ``keep`` cases, and ``changes`` made."""
    suite = json.loads(SUITE_FILE.read_text())
    suite["cases"] = [c for c in suite["cases"] if c["case_id"] in keep]
    suite.update(changes)
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    return path


def _configs(tmp_path: Path) -> tuple[Path, Path]:
    tight, generous = tmp_path / "tight.toml", tmp_path / "generous.json"
    tight.write_text(TIGHT)
    generous.write_text(json.dumps(GENEROUS))
    return tight, generous


def eval_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "eval", *args], env=env, capture_output=True, text=True, timeout=600
    )


def test_two_context_budgets_are_compared_on_real_runs_traced_to_their_manifests(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, ("late_delivery", "injection_in_tool_result"))
    tight, generous = _configs(tmp_path)
    out_json, out_html = tmp_path / "report.json", tmp_path / "report.html"
    done = eval_cli(
        _env(tmp_path / "data", temporal_server.address),
        str(suite), "--manifest", str(tight), "--manifest", str(generous),
        "--repeat", "2", "--json", str(out_json), "--html", str(out_html),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = EvalReport.model_validate_json(out_json.read_text())
    kept = tmp_path / "data" / "evals" / report.eval_id / "report.json"
    assert EvalReport.model_validate_json(kept.read_text()) == report

    # The terminal table: a row per work order and configuration, and the totals.
    assert "TOTAL" in done.stdout and "injection_in_tool_result" in done.stdout
    # A real difference: the tight evidence pool loses the policy passage to the injected note.
    assert (report.totals["tight-context"].passed, report.totals["generous-context"].passed) == (
        2,
        4,
    )
    injection = next(c for c in report.cases if c.case_id == "injection_in_tool_result")
    assert not injection.same_end_state
    assert injection.sides["tight-context"].passed == 0
    assert any("create_refund" in p for p in injection.sides["tight-context"].problems)
    late = next(c for c in report.cases if c.case_id == "late_delivery")
    assert late.same_end_state
    assert (
        late.sides["tight-context"].figures["omissions"]
        > late.sides["generous-context"].figures["omissions"]
    )
    # Significance over (case, repeat) pairs: the generous side alone passed 2 of 4.
    assert report.significance is not None
    assert (report.significance.pairs, report.significance.pass_rate.only_b) == (4, 2)
    assert report.significance.pass_rate.p_value == pytest.approx(0.5)
    _traced(report, tmp_path / "data")
    html = out_html.read_text()
    assert html.count("<svg") >= 4
    assert all(r.figures.run_id in html and r.figures.manifest_hash in html for r in report.runs)


def _traced(report: EvalReport, data_dir: Path) -> None:
    """Every run the report names is in the eval's ledger, under the manifest it names, and that
    manifest froze its configuration's context budget."""
    assert len(report.runs) == 8
    with embedded_ledger(data_dir, report.ledger) as ledger:
        for row in report.runs:
            events = ledger.read(row.figures.run_id)
            assert isinstance(events[0], RunStarted)
            assert {e.manifest_hash for e in events} == {row.figures.manifest_hash}
            manifest = ledger.get_manifest(row.figures.manifest_hash)
            assert manifest is not None and manifest.hash == row.figures.manifest_hash
            assert manifest.agent_version.endswith("+" + row.configuration)
            assert manifest.token_budget.sections["evidence"].tokens == EVIDENCE[row.configuration]
            assert events[0].work_order.pack == f"support+{row.configuration}"
    hashes = {n: t.configuration_hash for n, t in report.totals.items()}
    assert len(set(hashes.values())) == 2


async def test_the_shipped_support_suite_holds_under_the_generous_budget(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    """Every expectation the shipped suite states is met by the support agent with room for its
    evidence: the suite's hashes and citations are the agent's real outcomes, not guesses."""
    from agentledger.app.config import Settings
    from agentledger.evaluation import load_suite, resolve_pair, run_eval

    tight, generous = _configs(tmp_path)
    source = load_suite("support")
    settings = Settings(data_dir=tmp_path, temporal_address=temporal_server.address)
    report = await run_eval(settings, source, resolve_pair([tight, generous], "support"), 1)
    failed = {r.case_id: r.problems for r in report.runs if r.configuration == "generous-context"}
    assert {case: found for case, found in failed.items() if found} == {}
    assert len(failed) == len(source.suite.cases) == 7
