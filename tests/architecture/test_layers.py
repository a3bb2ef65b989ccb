"""The layers of ``layers.json`` held against the source, read with ``ast`` (nothing imported).

Every module of ``agentledger``, ``bench`` and ``tests`` is read, including imports nested in
functions, relative imports and ``"module:attribute"`` registry strings. An import arrow between
two parts must be drawn in the table; a part's external reach is followed transitively through
the project's own modules (importing ``a.b.c`` also runs ``a`` and ``a.b``).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLE = json.loads((Path(__file__).parent / "layers.json").read_text(encoding="utf-8"))
PACKAGES = ("agentledger", "bench", "tests")
_TARGET = re.compile(r"^([a-z_][\w.]*):[A-Za-z_]\w*$")


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted (a project module where one matches)
    where: str  # file:line

    def __str__(self) -> str:
        return f"{self.where} {self.source} -> {self.target}"


@cache
def modules() -> dict[str, Path]:
    """Every project module by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _package_of(module: str) -> str:
    is_package = modules()[module].name == "__init__.py"
    return module if is_package else module.rpartition(".")[0]


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(module).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _targets(module: str, node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = _resolve(module, node)
        for alias in node.names:
            # ``from pkg import mod`` imports the module pkg.mod when there is one.
            yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = _TARGET.match(node.value)
        if match and match.group(1) in modules():
            yield match.group(1)


@cache
def imports_of(module: str) -> tuple[Import, ...]:
    path = modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(ROOT)
    return tuple(
        Import(module, target, f"{where}:{node.lineno}")
        for node in ast.walk(tree)
        for target in _targets(module, node)
    )


def all_imports() -> Iterator[Import]:
    for module in modules():
        yield from imports_of(module)


def part_of(module: str) -> str | None:
    """The part whose longest ``is`` prefix names the module, or None outside the project."""
    best: tuple[int, str | None] = (0, None)
    for part, spec in TABLE["parts"].items():
        for prefix in spec["is"]:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), part)
    return best[1]


def _runs(target: str) -> Iterator[str]:
    """The project modules an import of ``target`` executes: each enclosing package, then it."""
    pieces = target.split(".")
    for end in range(1, len(pieces) + 1):
        name = ".".join(pieces[:end])
        if name in modules():
            yield name


def reach(start: str) -> dict[str, list[Import]]:
    """Every module (project or external) reached from ``start``, with the chain that reaches it."""
    chains: dict[str, list[Import]] = {start: []}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for imp in imports_of(module):
            targets = list(_runs(imp.target)) or [imp.target]
            for target in targets:
                if target not in chains:
                    chains[target] = [*chains[module], imp]
                    if target in modules():
                        queue.append(target)
    return chains


def modules_of(part: str) -> list[str]:
    return [m for m in modules() if part_of(m) == part]


def _external_reach(part: str) -> Iterator[tuple[str, list[Import]]]:
    for module in modules_of(part):
        for target, chain in reach(module).items():
            if target not in modules():
                yield target.split(".")[0], chain


def _chain(chain: list[Import]) -> str:
    return " ; ".join(str(imp) for imp in chain)


def test_the_walker_sees_known_imports() -> None:
    events = {i.target for i in imports_of("agentledger.domain.events")}
    assert "pydantic" in events
    run = {i.target for i in imports_of("agentledger.workflows.agent_run")}
    assert {"temporalio", "agentledger.domain.steps", "agentledger.workflows._core"} <= run
    # Deferred imports inside functions, and "module:attribute" registry targets.
    assert "agentledger.packs.support" in {i.target for i in imports_of("agentledger.app.registry")}
    assert "sqlalchemy" in reach("agentledger.cli.main")
    runs = {part_of(i.target) for i in imports_of("agentledger.cli.runs")}
    assert {"App", "CLI", "Domain"} <= runs


def test_the_walker_resolves_relative_imports_inside_the_package() -> None:
    node = ast.parse("from ._tables import x\nfrom .. import y").body
    assert isinstance(node[0], ast.ImportFrom) and isinstance(node[1], ast.ImportFrom)
    assert _resolve("agentledger.activities.ledger._store", node[0]) == (
        "agentledger.activities.ledger._tables"
    )
    assert _resolve("agentledger.activities.ledger", node[1]) == "agentledger.activities"


def test_every_part_is_read() -> None:
    assert all(modules_of(part) for part in TABLE["parts"])
    assert part_of("agentledger.packs.support.tools") == "Packs"
    assert part_of("agentledger.cli.main") == "CLI"
    assert part_of("agentledger.app.observability.metrics") == "App"
    assert part_of("agentledger") is None  # the root is the map, in no part


def test_the_table_draws_each_pair_once_and_names_only_its_parts() -> None:
    drawn = [tuple(a[:2]) for a in TABLE["arrows"]] + [tuple(n[:2]) for n in TABLE["never"]]
    assert len(drawn) == len(set(drawn))
    assert {p for pair in drawn for p in pair} <= set(TABLE["parts"])
    assert all(len(row) == 3 and row[2] for row in TABLE["arrows"] + TABLE["never"])


def _undrawn() -> list[tuple[tuple[str | None, str | None], str]]:
    allowed = {tuple(a[:2]) for a in TABLE["arrows"]}
    return [
        (arrow, f"{imp} ({arrow[0]} -> {arrow[1]})")
        for imp in all_imports()
        if (arrow := (part_of(imp.source), part_of(imp.target)))[1] not in (None, arrow[0])
        and arrow not in allowed
    ]


def test_every_import_between_parts_is_an_arrow_in_the_table() -> None:
    assert [where for _arrow, where in _undrawn()] == []


@pytest.mark.parametrize("never", TABLE["never"], ids=lambda n: f"{n[0]}-not-{n[1]}")
def test_no_chain_of_imports_crosses_a_never_arrow(never: list[str]) -> None:
    source, forbidden, _why = never
    crossings = [
        f"{target}: {_chain(chain)}"
        for module in modules_of(source)
        for target, chain in reach(module).items()
        if part_of(target) == forbidden and target != "agentledger"  # the root package runs first
    ]
    assert crossings[:5] == []


def test_domain_reaches_only_the_standard_library_and_its_allowlist() -> None:
    allowed = set(TABLE["reach"]["Domain"]["only"]) | sys.stdlib_module_names | {"__future__"}
    beyond = {top: _chain(chain) for top, chain in _external_reach("Domain") if top not in allowed}
    assert beyond == {}


def test_the_domain_allowlist_is_honest() -> None:
    reached = {top for top, _ in _external_reach("Domain")}
    assert set(TABLE["reach"]["Domain"]["only"]) <= reached


def test_workflows_reach_no_database_or_http_client_through_any_chain() -> None:
    forbidden = set(TABLE["reach"]["Workflows"]["never"])
    found = {top: _chain(chain) for top, chain in _external_reach("Workflows") if top in forbidden}
    assert found == {}


def _private_package(target: str) -> str | None:
    """``Y`` for a target ``Y._foo[.bar]`` (its first private component), else None."""
    pieces = target.split(".")
    for index, piece in enumerate(pieces):
        if piece.startswith("_") and not piece.startswith("__"):
            return ".".join(pieces[:index])
    return None


def test_no_module_imports_another_packages_private_module() -> None:
    exempt = set(TABLE["private"]["exempt"])
    reach_ins = []
    for imp in all_imports():
        owner = _private_package(imp.target)
        if owner is None or imp.target not in modules() or part_of(imp.source) in exempt:
            continue
        package = _package_of(imp.source)
        if owner not in (package, package.rpartition(".")[0]):
            reach_ins.append(str(imp))
    assert reach_ins == []
