"""τ²-bench and AgentDojo, already hosted as conformance packs, run as eval suites: the same
task under two configurations, judged by the benchmark's own oracle."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.registry import unregister_pack
from agentledger.evaluation import load_suite, resolve_pair, run_eval
from agentledger.packs.agentdojo import PACK_TARGETS as DOJO
from agentledger.packs.tau2 import PACK_TARGETS as TAU2
from agentledger.packs.tau2.catalog import reference


@pytest.fixture(autouse=True)
def _forget_hosted_packs() -> Iterator[None]:
    """Loading these suites registers their packs in this process; other tiers never see them."""
    yield
    for name in (*TAU2, *DOJO):
        unregister_pack(name)


def test_a_tau2_suite_expects_the_reference_db_hash_of_each_task() -> None:
    source = load_suite("tau2-retail", limit=2)
    assert [c.case_id for c in source.suite.cases] == ["task-0", "task-1"]
    for case in source.suite.cases:
        assert case.expect.end_state_hash == reference("retail", case.task["task"]).db_hash


@pytest.mark.parametrize(
    ("suite", "restriction", "problem"),
    [
        ("tau2-retail", {"budgets": {"steps": 3}}, "budget_exhausted"),
        ("agentdojo-banking", {"budgets": {"tool_calls": 1}}, "utility False"),
    ],
)
async def test_a_hosted_benchmark_compares_two_configurations(
    temporal_server: DevServer,
    tmp_path: Path,
    suite: str,
    restriction: dict[str, object],
    problem: str,
) -> None:
    source = load_suite(suite, limit=1)
    pack = source.suite.pack
    paths = [tmp_path / "baseline.json", tmp_path / "restricted.json"]
    extra = {"extra_instructions": [{"id": "instr:eval", "text": "Stay on the user's task."}]}
    paths[0].write_text(json.dumps({"name": "baseline", "pack": pack, "overrides": extra}))
    paths[1].write_text(json.dumps({"name": "restricted", "pack": pack, "overrides": restriction}))
    settings = Settings(data_dir=tmp_path, temporal_address=temporal_server.address)

    report = await run_eval(settings, source, resolve_pair(paths, pack), 1)

    assert report.totals["baseline"].passed == 1
    assert report.totals["restricted"].passed == 0
    (restricted,) = [r for r in report.runs if r.configuration == "restricted"]
    assert any(problem in p for p in restricted.problems)
