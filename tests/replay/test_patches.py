"""The one list of patch ids (``agentledger/workflows/_patches.py``) held against the workflow
code and the recorded histories: every ``workflow.patched`` call names a listed constant, every
listed id is asked somewhere, and the histories said to cover an id carry its marker (an id
covered by none yet is in no history: recording one means naming it here)."""

from __future__ import annotations

import ast
import base64
import json
from functools import cache
from pathlib import Path

from agentledger.workflows import _patches

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "agentledger" / "workflows"
HISTORIES = Path(__file__).parent / "histories"
HOUSEKEEPING = Path(__file__).parent / "housekeeping"


def _patched_arguments() -> list[tuple[str, ast.expr]]:
    found = []
    for path in sorted(WORKFLOWS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("patched", "deprecate_patch")
            ):
                found.append((f"{path.name}:{node.lineno}", node.args[0]))
    return found


@cache
def markers() -> dict[str, frozenset[str]]:
    """Each recorded history's patch ids, read from its ``core_patch`` markers."""
    found: dict[str, frozenset[str]] = {}
    for path in sorted([*HISTORIES.glob("*.json"), *HOUSEKEEPING.glob("*.json")]):
        ids = set()
        for event in json.loads(path.read_text(encoding="utf-8")).get("events", []):
            marker = event.get("markerRecordedEventAttributes") or {}
            if marker.get("markerName") != "core_patch":
                continue
            for details in marker.get("details", {}).values():
                for payload in details.get("payloads", []):
                    ids.add(json.loads(base64.b64decode(payload["data"]))["id"])
        found[path.name] = frozenset(ids)
    return found


def test_each_id_is_listed_once_under_its_constant() -> None:
    ids = [patch.id for patch in _patches.PATCHES]
    constants = {
        value for name, value in vars(_patches).items() if name.isupper() and isinstance(value, str)
    }
    assert len(ids) == len(set(ids))
    assert set(ids) == constants - {_patches._OLD_RUNS}
    assert all(patch.change and patch.deprecate_when for patch in _patches.PATCHES)


def test_workflows_name_a_patch_by_its_constant_and_ask_every_listed_one() -> None:
    calls = _patched_arguments()
    literal = [where for where, arg in calls if not isinstance(arg, ast.Attribute)]
    assert literal == []
    asked = {arg.attr for _where, arg in calls if isinstance(arg, ast.Attribute)}
    listed = {
        name
        for name, value in vars(_patches).items()
        if isinstance(value, str) and value in _patches.PATCHES_BY_ID
    }
    assert asked == listed


def test_the_histories_said_to_cover_an_id_carry_its_marker() -> None:
    recorded = markers()
    for patch in _patches.PATCHES:
        missing = [name for name in patch.covered_by if patch.id not in recorded.get(name, ())]
        assert missing == [], f"{patch.id}: {missing} do not carry its marker"


def test_an_id_covered_by_none_yet_is_in_no_history() -> None:
    uncovered = {patch.id for patch in _patches.PATCHES if not patch.covered_by}
    carrying = {name: ids & uncovered for name, ids in markers().items() if ids & uncovered}
    assert carrying == {}, "name these histories in the patch's covered_by"


def test_every_marker_in_a_history_is_a_listed_id() -> None:
    unknown = {name: ids - _patches.PATCHES_BY_ID.keys() for name, ids in markers().items()}
    assert {name: ids for name, ids in unknown.items() if ids} == {}
