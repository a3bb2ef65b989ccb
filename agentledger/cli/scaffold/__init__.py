"""``agentledger new pack NAME``: an installable pack of your own, built on ``agentledger.sdk``,
that runs out of the box (a read tool, a consequential tool behind approval, a step graph, a
scripted model, seed data and its own tests).

The templates are package data (``templates/**/*.tmpl``); ``{{pack}}``, ``{{ident}}``,
``{{module}}`` and ``{{dist}}`` are filled in and a ``module/`` directory is renamed to the
pack's module. The pack is written to a temporary sibling directory and moved into place whole,
so a failure leaves nothing half-written.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from agentledger.app.errors import ConfigError
from agentledger.app.registry import BUILT_IN_PACKS

__all__ = ["PackNames", "ScaffoldError", "pack_names_for", "render", "scaffold_pack"]

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_MAX_NAME = 40
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SUFFIX = ".tmpl"


class ScaffoldError(ConfigError):
    """An invalid pack name, or a target that is not an empty directory."""


@dataclass(frozen=True)
class PackNames:
    """Every spelling of a new pack's name the templates use."""

    pack: str
    """The pack's name: the entry point's, the work orders' ``pack``, ``agentledger run``'s."""
    ident: str
    """The name as an identifier (tables, principals, scopes)."""
    module: str
    """The import package (the entry point's ``module:PACK``)."""
    dist: str
    """The distribution ``pip`` installs."""

    def values(self) -> dict[str, str]:
        return {"pack": self.pack, "ident": self.ident, "module": self.module, "dist": self.dist}


def pack_names_for(name: str) -> PackNames:
    if len(name) > _MAX_NAME or _NAME.fullmatch(name) is None:
        raise ScaffoldError(
            f"{name!r} is not a pack name: lower-case letters and digits, words joined by - or _, "
            f"starting with a letter, at most {_MAX_NAME} characters (e.g. acme or acme-billing)"
        )
    if name in BUILT_IN_PACKS:
        raise ScaffoldError(f"{name!r} is a built-in pack's name; choose another")
    ident = name.replace("-", "_")
    return PackNames(pack=name, ident=ident, module=f"{ident}_pack", dist=f"agentledger-{name}")


def render(text: str, names: PackNames) -> str:
    """Fill the placeholders; an unknown one is a bug in a template, never left in output."""
    values = names.values()

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"template placeholder {{{{{key}}}}} is not one of {sorted(values)}")
        return values[key]

    return _PLACEHOLDER.sub(fill, text)


def templates() -> Traversable:
    return files(__name__) / "templates"


def scaffold_pack(name: str, path: Path | None = None) -> Path:
    """Write the pack ``name`` into ``path`` (default ``./NAME``), which must not exist or be an
    empty directory; returns the directory written."""
    names = pack_names_for(name)
    target = (path if path is not None else Path.cwd() / name).resolve()
    _check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        _write_tree(templates(), staging, names)
        if target.exists():
            target.rmdir()  # checked empty above
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _check_target(target: Path) -> None:
    if target.is_dir() and any(target.iterdir()):
        raise ScaffoldError(f"{target} is not empty; choose a new or empty directory (--path)")
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a directory; choose another (--path)")


def _write_tree(source: Traversable, destination: Path, names: PackNames) -> None:
    for entry in sorted(source.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            child = destination / (names.module if entry.name == "module" else entry.name)
            child.mkdir()
            _write_tree(entry, child, names)
        elif entry.name.endswith(_SUFFIX):
            filename = entry.name.removesuffix(_SUFFIX).replace("module", names.module)
            (destination / filename).write_text(render(entry.read_text("utf-8"), names), "utf-8")
