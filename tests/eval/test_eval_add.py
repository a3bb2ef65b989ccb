"""A production run as a regression case (``agentledger eval add RUN --at SEQ --suite FILE``):
the case carries the run up to SEQ and expects what it did after; ``agentledger eval`` runs it
as a fork under each configuration, on the eval's own ledger, and fails the configuration that
cannot do what production did."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentledger.activities.sandboxes import Sandboxes
from agentledger.app.devserver import DevServer
from agentledger.app.payloads import ring_path
from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.evaluation import Suite
from agentledger.evaluation import EvalReport
from tests._temporal import Harness
from tests.e2e.test_cli import embedded_ledger
from tests.eval.test_eval_command import CLI, _env
from tests.workflows.test_fork import last_boundary, refunds_of
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


def cli(harness: Harness, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = _env(data, harness.settings.address)
    env["AGENTLEDGER_PAYLOAD_KEYS"] = str(ring_path(harness.settings))  # the worker's ring
    return subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_refunded_run_becomes_a_case_that_fails_a_configuration_that_cannot_refund(
    harness: Harness, temporal_server: DevServer, tmp_path: Path
) -> None:
    run_id = await harness.start(REQUEST)
    (approval,) = await harness.in_inbox(run_id)
    await harness.decide(run_id, approval.approval_id, "ops_lead_1")
    await harness.finish(run_id)
    events = harness.runtime.ledger.read(run_id)
    seq = last_boundary(events)
    suite_file, data = tmp_path / "regressions.json", tmp_path / "data"
    ledger_flag = ("--database-url", str(harness.settings.database_url))

    added = cli(harness, data, "eval", "add", run_id, "--at", str(seq), "--suite",
                str(suite_file), *ledger_flag)  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines()[0] == f"{run_id}-at-{seq}"
    suite = Suite.model_validate_json(suite_file.read_text())
    assert (suite.name, suite.version, suite.pack, suite.approver) == (
        "regressions", "1", "support", "ops_lead_1",
    )  # fmt: skip
    (case,) = suite.cases
    assert (case.user, case.request, case.approve) == ("usr_73", REQUEST, True)
    assert case.fork is not None and case.fork.events[-1].seq == seq
    expect = case.expect
    assert (expect.status, expect.approvals) == ("completed", 1)
    (refund,) = expect.receipts
    assert refund.tool == "create_refund" and refund.arguments["order_id"] == "ord_4821"
    writes = {n for n, c in get_pack("support").contracts.items() if c.scope == "write"}
    assert {p.tool for p in expect.no_receipts} == writes - {"create_refund"}

    # The same point again is refused by its id; under another id the suite's version moves.
    again = cli(harness, data, "eval", "add", run_id, "--at", str(seq), "--suite",
                str(suite_file), *ledger_flag)  # fmt: skip
    assert again.returncode == 2 and "case_exists" not in again.stdout
    assert "has a case" in again.stderr
    inside = next(e.seq for e in events if isinstance(e, ev.ApprovalRequested))
    mid = cli(harness, data, "eval", "add", run_id, "--at", str(inside), "--suite",
              str(suite_file), "--case-id", "mid", *ledger_flag)  # fmt: skip
    assert mid.returncode == 5 and "fork_point_mid_operation" in mid.stderr
    assert Suite.model_validate_json(suite_file.read_text()).version == "1"

    report = _eval(harness, data, suite_file, tmp_path)
    assert {n: t.passed for n, t in report.totals.items()} == {"baseline": 1, "no-refunds": 0}
    (row,) = [r for r in report.runs if r.configuration == "no-refunds"]
    assert any("create_refund" in p for p in row.problems), row.problems
    (base,) = [r for r in report.runs if r.configuration == "baseline"]
    with embedded_ledger(harness.settings.data_dir, report.ledger) as eval_ledger:
        for run in report.runs:
            forked = eval_ledger.read(run.figures.run_id)[1]
            assert isinstance(forked, ev.RunForked)
            assert (forked.origin_run_id, forked.facts_hash) == (run_id, case.fork.state_hash)
        # The fork refunded in its sandbox; the eval's copy of the records holds no refund.
        sandbox = Sandboxes(eval_ledger.engine).engine(base.figures.run_id, get_pack("support"))
        assert len(refunds_of(harness, "ord_4821", sandbox)) == 1
        assert refunds_of(harness, "ord_4821", eval_ledger.engine) == []


def _eval(harness: Harness, data: Path, suite_file: Path, tmp_path: Path) -> EvalReport:
    grants = [g.name for g in get_pack("support").profile.tool_grants]
    configs = {
        "baseline": {"extra_instructions": [{"id": "instr:brief", "text": "Be brief."}]},
        "no-refunds": {"tool_grants": [g for g in grants if g != "create_refund"]},
    }
    paths = []
    for name, overrides in configs.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"name": name, "pack": "support", "overrides": overrides}))
        paths += ["--manifest", str(path)]
    out = tmp_path / "report.json"
    done = cli(harness, data, "eval", str(suite_file), *paths, "--json", str(out))
    assert done.returncode == 0, done.stderr
    return EvalReport.model_validate_json(out.read_text())
