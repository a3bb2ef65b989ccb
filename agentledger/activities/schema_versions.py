"""Whether a schema is at its newest Alembic revision, answered without loading Alembic.

Every worker start brings the ledger's schema and each pack's to their newest revision. Alembic
(10 MB and 131 modules in a worker) is only needed where one is behind: a release runs
``agentledger migrate`` once, and the workers that start after it read one version row per
schema and go on. The newest revision comes from the migration scripts themselves, read as
Alembic reads them (each file's module-level ``revision`` and ``down_revision``); a script this
cannot read, or a history with more than one head, is left to Alembic, which names the problem.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sqlalchemy import Engine, column, inspect, select, table

_NAMES = frozenset({"revision", "down_revision"})


def script_heads(migrations: Path) -> frozenset[str] | None:
    """The head revisions of the scripts in ``migrations/versions`` (None: not readable here)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in sorted((migrations / "versions").glob("*.py")):
        if script.name == "__init__.py":
            continue
        found = _identifiers(script)
        revision = found.get("revision")
        if not isinstance(revision, str):
            return None
        revisions.add(revision)
        parents.update(_revisions(found.get("down_revision")))
    return frozenset(revisions - parents) or None


def at_head(engine: Engine, migrations: Path, version_table: str) -> bool:
    """True when ``version_table`` names exactly the scripts' heads: nothing to migrate."""
    heads = script_heads(migrations)
    if heads is None or len(heads) != 1:
        return False
    with engine.connect() as conn:
        if not inspect(conn).has_table(version_table):
            return False
        versions = table(version_table, column("version_num"))
        return frozenset(conn.scalars(select(versions.c.version_num))) == heads


def _identifiers(script: Path) -> dict[str, object]:
    """The literal values of ``revision`` and ``down_revision`` at a script's top level."""
    found: dict[str, object] = {}
    for node in ast.parse(script.read_bytes(), filename=str(script)).body:
        target, value = _assigned(node)
        if target in _NAMES and value is not None:
            try:
                found[target] = ast.literal_eval(value)
            except ValueError:
                return {}  # computed, not a literal: Alembic's to read
    return found


def _revisions(down_revision: object) -> tuple[str, ...]:
    """A ``down_revision``: None (the first), one revision, or a merge's several."""
    if isinstance(down_revision, str):
        return (down_revision,)
    return tuple(down_revision) if isinstance(down_revision, tuple | list) else ()


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return (target.id if isinstance(target, ast.Name) else None), node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None
