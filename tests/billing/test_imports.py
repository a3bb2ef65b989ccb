"""The billing pack is built only through the public API: it imports nothing from agentledger
but agentledger.sdk (and its own modules)."""

from __future__ import annotations

import ast
from pathlib import Path

import agentledger.packs.billing as billing

PACKAGE = Path(billing.__file__).parent


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            found.append(node.module or "")
    return found


def test_the_billing_pack_imports_only_the_sdk_from_agentledger() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 5
    beyond = {
        f"{path.name}: {target}"
        for path in modules
        for target in _imports(path)
        if target.split(".")[0] == "agentledger"
        and target != "agentledger.sdk"
        and not target.startswith("agentledger.packs.billing")
    }
    assert beyond == set()


def test_the_walker_would_see_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("from agentledger.domain.tools import ToolContract\n", encoding="utf-8")
    assert _imports(module) == ["agentledger.domain.tools"]
