"""The package root is the map and nothing else: ``__init__.py`` (its docstring draws the layers),
``py.typed`` and the subpackages. A new module goes into the room it belongs to."""

from __future__ import annotations

from pathlib import Path

import agentledger

ROOT = Path(__file__).resolve().parents[2] / "agentledger"


def _tracked(path: Path) -> bool:
    return path.name != "__pycache__" and not path.name.endswith((".pyc", ".egg-info"))


def test_the_root_holds_only_the_map_the_type_marker_and_subpackages() -> None:
    files = sorted(p.name for p in ROOT.iterdir() if p.is_file() and _tracked(p))
    assert files == ["__init__.py", "py.typed"]
    loose = [p.name for p in ROOT.iterdir() if p.is_dir() and _tracked(p)
             and not (p / "__init__.py").exists()]  # fmt: skip
    assert loose == []


def test_the_map_names_every_subpackage() -> None:
    doc = agentledger.__doc__ or ""
    rooms = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())
    assert [room for room in rooms if f"{room}/" not in doc] == []
