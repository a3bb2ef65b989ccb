"""The audit of starter-written fields (``docs/security.md``) covers every field and names real
tests: a field added to the workflow's input or updates without a row fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pydantic import BaseModel

from agentledger.domain.handoffs import HandoffOrigin
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import ArgumentBound, ModelOverride, WorkGrant, WorkOrder
from agentledger.workflows import (
    ApprovalDecision,
    CancelOrder,
    Continuation,
    Reply,
    RunInput,
    SteerOrder,
)

ROOT = Path(__file__).resolve().parents[2]
AUDITED: tuple[type[BaseModel], ...] = (
    RunInput,
    Continuation,
    HandoffOrigin,
    WorkOrder,
    WorkGrant,
    ArgumentBound,
    ModelOverride,
    Principal,
    ApprovalDecision,
    Reply,
    CancelOrder,
    SteerOrder,
)


def _rows() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "security.md").read_text()
    table = text.split("## Every field a starter writes", 1)[1]
    rows = re.findall(r"^\| `(\w+\.\w+)` \|.*\| (.+) \|$", table, re.M)
    return {field: re.findall(r"`(tests/[\w/]+\.py::\w+)`", tests) for field, tests in rows}


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_field_a_starter_writes_has_a_row() -> None:
    fields = {f"{model.__name__}.{name}" for model in AUDITED for name in model.model_fields}
    rows = _rows()
    assert fields - rows.keys() == set(), "fields without a row in docs/security.md"
    assert rows.keys() - fields == set(), "rows for fields that no longer exist"


def test_every_row_names_tests_that_exist() -> None:
    for field, tests in _rows().items():
        assert tests, f"{field}: no test named"
        for reference in tests:
            path, name = reference.split("::")
            assert (ROOT / path).exists(), reference
            assert name in _tests_in(ROOT / path), reference
