"""The CLI's pack commands: ``packs`` (what is installed, and what is broken), ``schema STEP``
(the decision a step's model must return) and ``new pack NAME`` (a pack of your own).

None of them opens the ledger or talks to Temporal: they read the registry and the packs'
profiles only.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError
from agentledger.app.registry import (
    PackLoadError,
    PackSource,
    UnknownPack,
    get_pack,
    pack_sources,
    refused_sources,
    register_env_packs,
)
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import OutputSchema
from agentledger.domain.context.packet import decision_schema
from agentledger.domain.manifest import AgentProfile

say = print


@dataclass(frozen=True)
class PackRow:
    """One line of ``agentledger packs``; ``error`` is set for a pack that cannot be used."""

    name: str
    source: str
    target: str
    version: str | None = None
    profile_id: str | None = None
    profile_hash: str | None = None
    error: str | None = None


def profile_hash(profile: AgentProfile) -> str:
    """``sha256:`` of the profile's canonical JSON. Defaults are left out (as ``state_hash``
    does), so a field added to AgentProfile later does not move the hash of a profile that
    does not set it."""
    return sha256_hex(profile.model_dump(mode="json", exclude_defaults=True))


def pack_row(source: PackSource) -> PackRow:
    row = PackRow(name=source.name, source=source.describe(), target=source.target)
    if source.problem is not None:  # a name conflict: nothing to import
        return _with(row, version=source.version, error=source.problem)
    try:
        pack = get_pack(source.name)
    except PackLoadError as exc:
        return _with(row, version=source.version, error=exc.cause)
    return _with(
        row,
        version=source.version or pack.profile.agent_version,
        profile_id=pack.profile.profile_id,
        profile_hash=profile_hash(pack.profile),
    )


def _with(row: PackRow, **fields: str | None) -> PackRow:
    return PackRow(**{**asdict(row), **fields})


def installed_rows(settings: Settings) -> list[PackRow]:
    register_env_packs(settings.extra_packs)
    return [pack_row(source) for source in (*pack_sources(), *refused_sources())]


async def packs(settings: Settings, args: argparse.Namespace) -> int:
    """List every pack; exit 2 (as a lookup of a broken pack does) if any is broken."""
    rows = installed_rows(settings)
    if args.json:
        for row in rows:
            say(orjson.dumps(asdict(row)).decode())
    else:
        for line in _table(rows):
            say(line)
    broken = [row.name for row in rows if row.error is not None]
    if broken:  # on stderr, so that --json's output stays one object per line
        print(f"agentledger: broken packs: {', '.join(broken)}", file=sys.stderr)
        return PackLoadError.exit_code
    return 0


def _table(rows: list[PackRow]) -> list[str]:
    lines = [f"{'NAME':<18} {'VERSION':<18} {'PROFILE':<22} {'HASH':<19} SOURCE"]
    for row in rows:
        digest = row.profile_hash[7:19] if row.profile_hash else "-"
        lines.append(
            f"{row.name:<18} {row.version or '-':<18} {row.profile_id or '-':<22} {digest:<19} "
            f"{row.source} ({row.target})"
        )
        if row.error is not None:
            lines.append(f"{'':<18} error: {row.error}")
    return lines


def step_schema(profile: AgentProfile, step: str) -> OutputSchema:
    """The decision ``step`` expects, exactly as its context packet carries it."""
    steps = {s.name: s for s in profile.step_profiles}
    if step not in steps:
        raise ConfigError(
            f"profile {profile.profile_id!r} has no step {step!r}; its steps: {', '.join(steps)}"
        )
    graph = profile.step_graph
    node = graph.node(step) if graph is not None else None
    handoffs = tuple(h.name for h in profile.handoffs if step in h.steps)
    return decision_schema(steps[step].output_schema, node, handoffs, bound_claims=True)


async def schema(settings: Settings, args: argparse.Namespace) -> int:
    register_env_packs(settings.extra_packs)
    try:
        pack = get_pack(args.pack)
    except PackLoadError:
        raise
    except UnknownPack as exc:
        raise ConfigError(str(exc)) from None
    found = step_schema(pack.profile, args.step)
    say(orjson.dumps(found.json_schema, option=orjson.OPT_INDENT_2).decode())
    return 0


async def new(settings: Settings, args: argparse.Namespace) -> int:
    from agentledger.cli.scaffold import scaffold_pack

    target = scaffold_pack(args.name, Path(args.path) if args.path else None)
    say(f"created pack {args.name!r} in {target}/")
    say(f"  pip install -e '{target}[test]'   # registers entry point {args.name!r}, and pytest")
    say(f"  agentledger run {args.name} ... --user ...   # with a worker started after the install")
    return 0
