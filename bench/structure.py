"""The shape of a checkout: longest functions, large modules and the import arrows between layers.

    python -m bench.structure [--root PATH]

Reads source with ``ast`` (nothing is imported), so it runs on any checkout: this layout (the
layers under ``agentledger/``) or the older one (``domain/``, ``workflows/``, ``activities/``,
``packs/`` beside ``agentledger/``). Product code is everything but ``tests/`` and ``bench/``;
migrations are left out of the function counts.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

LAYERS = ("domain", "workflows", "activities", "packs")
PUBLIC = {"sdk": "SDK"}
"""Parts of the import root with a layer of their own (the pack authors' API)."""


def layer_of(module: str) -> str | None:
    """The layer a dotted module name belongs to, in either layout."""
    parts = module.split(".")
    if parts[0] == "agentledger":
        if len(parts) > 1 and parts[1] in PUBLIC:
            return PUBLIC[parts[1]]
        return parts[1].capitalize() if len(parts) > 1 and parts[1] in LAYERS else "Shell"
    if parts[0] in LAYERS:
        return parts[0].capitalize()
    return {"bench": "Bench", "tests": "Tests"}.get(parts[0])


def modules(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] in (".venv", "node_modules") or "node_modules" in relative.parts:
            continue
        yield ".".join(relative.with_suffix("").parts).removesuffix(".__init__"), path


def _is_product(name: str) -> bool:
    return layer_of(name) not in (None, "Bench", "Tests") and "migrations" not in name


def _imports(tree: ast.AST, package: str) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            yield ".".join(p for p in (base, node.module or "") if p)


def survey(root: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]], Counter[str]]:
    functions: list[tuple[int, str]] = []
    sizes: list[tuple[int, str]] = []
    arrows: Counter[str] = Counter()
    for name, path in modules(root):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        where = str(path.relative_to(root))
        if _is_product(name):
            sizes.append((len(source.splitlines()), where))
            functions += [
                (node.end_lineno - node.lineno + 1, f"{where}:{node.lineno} {node.name}")
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
            ]
        source_layer = layer_of(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target in _imports(tree, package):
            target_layer = layer_of(target)
            if source_layer and target_layer and target_layer != source_layer:
                arrows[f"{source_layer} -> {target_layer}"] += 1
    return sorted(functions, reverse=True), sorted(sizes, reverse=True), arrows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().root.resolve()
    functions, sizes, arrows = survey(root)
    print(f"# {root}")
    print("longest functions (product code):")
    for lines, where in functions[:15]:
        print(f"  {lines:4d}  {where}")
    over = {limit: sum(1 for n, _ in functions if n > limit) for limit in (30, 40)}
    print(f"functions: {len(functions)}; over 30 lines: {over[30]}; over 40 lines: {over[40]}")
    print("modules over 300 lines:")
    for lines, where in (s for s in sizes if s[0] > 300):
        print(f"  {lines:4d}  {where}")
    print("import arrows between layers (count of imports):")
    for arrow, count in sorted(arrows.items()):
        print(f"  {arrow:28s} {count}")


if __name__ == "__main__":
    main()
