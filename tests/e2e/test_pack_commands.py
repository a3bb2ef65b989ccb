"""``agentledger packs`` and ``agentledger schema`` as a pack author meets them: installed
distributions found by entry point, a broken one named with its cause, exit codes that say so."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from agentledger.cli.packs import profile_hash
from agentledger.domain.context.packet import decision_schema
from agentledger.packs.support import PACK as SUPPORT
from tests.e2e.test_cli import CLI
from tests.e2e.test_pack_registry import GOOD, write_dist, write_module


def cli(site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLEDGER_PACKS"}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60)


def rows(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str | None]]:
    return {row["name"]: row for row in map(json.loads, result.stdout.splitlines())}


def test_packs_lists_the_built_in_pack_with_its_profile_and_hash() -> None:
    listed = cli(None, "packs", "--json")
    assert listed.returncode == 0, listed.stderr
    support = rows(listed)["support"]
    assert support["source"] == "built-in" and support["error"] is None
    assert support["version"] == SUPPORT.profile.agent_version
    assert support["profile_id"] == "support-refunds"
    assert support["profile_hash"] == profile_hash(SUPPORT.profile)
    assert str(support["profile_hash"]).startswith("sha256:")


def test_packs_lists_an_installed_pack_and_a_broken_one_and_exits_non_zero(
    tmp_path: Path,
) -> None:
    write_module(tmp_path, "cli_ok_pkg", GOOD.format(name="cli_ok"))
    write_module(tmp_path, "cli_broken_pkg", "raise RuntimeError('the vendor broke it')\n")
    write_dist(tmp_path, "cli-ok", "2.0.1", {"cli_ok": "cli_ok_pkg:PACK"})
    write_dist(tmp_path, "cli-broken", "0.9", {"cli_broken": "cli_broken_pkg:PACK"})

    listed = cli(tmp_path, "packs", "--json")
    assert listed.returncode == 2, listed.stderr
    assert listed.stderr.strip() == "agentledger: broken packs: cli_broken"
    found = rows(listed)
    assert found["cli_ok"]["source"] == "entry point of cli-ok 2.0.1"
    assert found["cli_ok"]["version"] == "2.0.1" and found["cli_ok"]["error"] is None
    assert found["cli_broken"]["error"] == "RuntimeError: the vendor broke it"
    assert found["cli_broken"]["profile_hash"] is None
    assert found["support"]["error"] is None  # one broken pack does not hide the others

    table = cli(tmp_path, "packs")
    assert table.returncode == 2
    assert "error: RuntimeError: the vendor broke it" in table.stdout
    assert "entry point of cli-ok 2.0.1 (cli_ok_pkg:PACK)" in table.stdout


def test_running_a_broken_pack_is_one_line_naming_its_cause(tmp_path: Path) -> None:
    write_module(tmp_path, "cli_number_pkg", "PACK = 7\n")
    write_dist(tmp_path, "cli-number", "1", {"cli_number": "cli_number_pkg:PACK"})
    shown = cli(tmp_path, "schema", "draft_answer", "--pack", "cli_number")
    assert shown.returncode == 2
    assert shown.stderr.strip() == (
        "agentledger: pack 'cli_number' (cli_number_pkg:PACK, entry point of cli-number 1) "
        "cannot be loaded: cli_number_pkg:PACK is a int, not an agentledger Pack"
    )


def test_schema_prints_each_steps_decision_schema_from_its_profile_and_graph() -> None:
    """(tests/e2e/test_new_pack.py compares it with a stored packet's schema.)"""
    graph = SUPPORT.profile.step_graph
    for profile in SUPPORT.profile.step_profiles:
        shown = cli(None, "schema", profile.name, "--pack", "support")
        assert shown.returncode == 0, shown.stderr
        node = graph.node(profile.name) if graph is not None else None
        expected = decision_schema(profile.output_schema, node, bound_claims=True).json_schema
        assert json.loads(shown.stdout) == expected
    decides, answers = (
        cli(None, "schema", step).stdout for step in ("choose_next_action", "draft_answer")
    )
    assert '"call_tool"' in decides and '"call_tool"' not in answers
    assert '"supporting_source_ids"' in answers
    assert '"claims"' in answers and "claimed_operation_ids" not in answers


def test_schema_of_an_unknown_step_lists_the_steps_and_exits_2() -> None:
    shown = cli(None, "schema", "classify")
    assert shown.returncode == 2
    assert shown.stderr.strip() == (
        "agentledger: profile 'support-refunds' has no step 'classify'; its steps: "
        "choose_next_action, draft_answer"
    )
    unknown = cli(None, "schema", "draft_answer", "--pack", "nopack")
    assert unknown.returncode == 2 and "unknown pack 'nopack'" in unknown.stderr
