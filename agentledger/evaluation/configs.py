"""Configuration files: a pack and typed overrides, resolved into a pack this process serves.

A file is JSON or TOML (by its suffix)::

    name = "tight-context"
    pack = "support"
    description = "the evidence pool cut to 150 tokens"
    [overrides.context.sections]
    evidence = 150

Its fields are ``domain.evaluation.EvalConfig``'s; an unknown field, a tool the pack does not
grant, or a profile the overrides make invalid is refused with the file's name. The resolved
profile becomes an *overlay* pack (``support+tight-context``) that the eval's own worker serves:
its runs go through ``prepare_run`` like any other, so their manifests freeze it.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from agentledger.activities.ports import Pack
from agentledger.app.errors import ConfigurationsIdentical, EvalInputInvalid
from agentledger.app.registry import UnknownPack, get_pack
from agentledger.domain.evaluation import (
    EvalConfig,
    EvalInputError,
    IdenticalConfigurations,
    apply_override,
    check_distinct,
    configuration_hash,
)
from agentledger.evaluation.sources import one_line

__all__ = ["Configuration", "load_config", "resolve_pair"]


@dataclass(frozen=True)
class Configuration:
    """One side of a comparison: its file, its settings and the pack that serves it."""

    source: str
    config: EvalConfig
    pack: Pack

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def configuration_hash(self) -> str:
        return configuration_hash(self.pack.profile)


def load_config(path: Path) -> EvalConfig:
    try:
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        return EvalConfig.model_validate(raw)
    except (OSError, ValueError) as exc:  # a ValidationError is a ValueError
        raise EvalInputInvalid(
            f"configuration {path}: {one_line(exc)}", "config_unreadable"
        ) from None


def _resolve(path: Path, suite_pack: str) -> Configuration:
    config = load_config(path)
    if config.pack != suite_pack:
        raise EvalInputInvalid(
            f"configuration {path} is for pack {config.pack!r}, the suite runs pack {suite_pack!r}",
            "pack_mismatch",
        )
    try:
        base = get_pack(config.pack)
    except UnknownPack as exc:
        raise EvalInputInvalid(f"configuration {path}: {exc}", "unknown_pack") from None
    try:
        profile = apply_override(base.profile, config)
    except EvalInputError as exc:
        raise EvalInputInvalid(f"configuration {path}: {one_line(exc)}", exc.code) from None
    pack = replace(base, name=f"{base.name}+{config.name}", profile=profile)
    return Configuration(str(path), config, pack)


def resolve_pair(paths: list[Path], suite_pack: str) -> tuple[Configuration, Configuration]:
    """The two configurations to compare: distinct names, and manifests that differ."""
    if len(paths) != 2:
        raise EvalInputInvalid(
            f"an eval compares exactly two configurations (--manifest A --manifest B); "
            f"got {len(paths)}",
            "config_count",
        )
    a, b = (_resolve(p, suite_pack) for p in paths)
    if a.name == b.name:
        raise EvalInputInvalid(
            f"both configurations are called {a.name!r}; give them distinct names",
            "config_names_equal",
        )
    try:
        check_distinct(a.pack.profile, b.pack.profile, (a.name, b.name))
    except IdenticalConfigurations as exc:
        raise ConfigurationsIdentical(str(exc)) from None
    return a, b
