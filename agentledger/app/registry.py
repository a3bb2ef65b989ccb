"""The installed packs, by name: the composition root's registry. Activities and workflows never
look packs up; the root hands the activities this lookup.

A pack comes from one of four sources; a later one overrides an earlier one of the same name:

1. built-in (``support``);
2. the entry-point group ``agentledger.packs`` of every installed distribution, so that
   ``pip install acme-agent`` is all it takes (``[project.entry-points."agentledger.packs"]
   acme = "acme_agent:PACK"``); an entry point may not take a built-in pack's name, and a name
   two distributions claim belongs to neither;
3. ``AGENTLEDGER_PACKS=name=module:attribute,...`` (ad hoc, e.g. a benchmark's pack);
4. ``register_pack(name, "module:attribute")`` (tests).

A pack is imported when it is first looked up. One that fails to import, is not a ``Pack`` or
calls itself by another name raises ``PackLoadError`` (naming the pack, its target and the cause)
at that lookup and is not cached: the others still list and load. ``loaded_packs`` is what a
process that serves every pack uses: the packs that load, and why each other one does not.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from types import MappingProxyType
from typing import Literal

from agentledger.activities.ports import Pack, UnknownPack
from agentledger.app.errors import AgentLedgerError, ConfigError

__all__ = [
    "BUILT_IN_PACKS",
    "ENTRY_POINT_GROUP",
    "PackInstalledAfterStart",
    "PackLoadError",
    "PackSource",
    "UnknownPack",
    "get_pack",
    "loaded_packs",
    "pack_names",
    "pack_sources",
    "rediscover",
    "refused_sources",
    "register_env_packs",
    "register_pack",
    "unregister_pack",
]

ENTRY_POINT_GROUP = "agentledger.packs"
Origin = Literal["built-in", "entry point", "env", "registered"]

BUILT_IN_PACKS: Mapping[str, str] = MappingProxyType(
    {
        "support": "agentledger.packs.support:PACK",
        # The support agent with a fraud-check handoff to a read-only reviewer (docs/handoffs.md)
        "support_reviewed": "agentledger.packs.support.review:PACK",
        "billing": "agentledger.packs.billing:PACK",  # built only through agentledger.sdk
    }
)
_env: dict[str, str] = {}
_registered: dict[str, str] = {}


@dataclass(frozen=True)
class PackSource:
    """Where a pack name points: ``module:attribute``, and which source said so."""

    name: str
    target: str
    origin: Origin
    distribution: str | None = None
    """The installed distribution that declares the entry point (entry points only)."""
    version: str | None = None
    """That distribution's version."""
    problem: str | None = None
    """Why this source cannot be used even before it is imported (a name conflict)."""

    def describe(self) -> str:
        if self.origin == "entry point":
            return f"entry point of {self.distribution} {self.version}"
        return self.origin


class PackLoadError(UnknownPack, AgentLedgerError):
    """A pack that is named but cannot be used: its import failed, its object is not a ``Pack``,
    it calls itself by another name, or its name is claimed twice."""

    exit_code = 2

    def __init__(self, source: PackSource, cause: str) -> None:
        self.source = source
        self.cause = cause
        super().__init__(
            f"pack {source.name!r} ({source.target}, {source.describe()}) cannot be loaded: {cause}"
        )


class PackInstalledAfterStart(UnknownPack):
    """A pack installed after this process read the installed packs: a running worker serves
    the packs installed when it started (their tables, scripted models and tools are set up
    then), so it must be restarted to serve this one."""

    def __init__(self, source: PackSource) -> None:
        self.source = source
        super().__init__(
            f"pack {source.name!r} ({source.target}, {source.describe()}) was installed after "
            "this process started, and it serves the packs installed when it started: restart "
            "it to serve the new one (a worker: `agentledger worker` or `agentledger dev`; the "
            "API: `agentledger serve`)"
        )


def register_pack(name: str, target: str) -> None:
    """Make another pack (``module:attribute``) available, e.g. a test's or a benchmark's."""
    _registered[_checked_name(name)] = _checked_target(name, target)
    get_pack.cache_clear()


def unregister_pack(name: str) -> None:
    """Forget a pack ``register_pack`` added (a test's, when the test is done with it)."""
    _registered.pop(name, None)
    get_pack.cache_clear()


def register_env_packs(entries: Iterable[str]) -> None:
    """Register ``AGENTLEDGER_PACKS`` entries (``name=module:attribute``); all or none."""
    parsed = {}
    for entry in entries:
        name, sep, target = entry.partition("=")
        if not sep or ":" not in target:
            raise ConfigError(f"AGENTLEDGER_PACKS entry {entry!r} is not name=module:attr")
        parsed[_checked_name(name.strip())] = _checked_target(name, target.strip())
    _env.update(parsed)
    get_pack.cache_clear()


def rediscover() -> None:
    """Read the installed distributions' entry points again (after an install in-process)."""
    importlib.invalidate_caches()
    _entry_point_sources.cache_clear()
    get_pack.cache_clear()


def pack_sources() -> tuple[PackSource, ...]:
    """Every pack name once, with the source a lookup uses, in source order."""
    table = {name: PackSource(name, target, "built-in") for name, target in BUILT_IN_PACKS.items()}
    for source in _entry_point_sources():
        if source.name not in BUILT_IN_PACKS:
            table[source.name] = source
    table.update({name: PackSource(name, target, "env") for name, target in _env.items()})
    table.update({n: PackSource(n, target, "registered") for n, target in _registered.items()})
    return tuple(table.values())


def refused_sources() -> tuple[PackSource, ...]:
    """Entry points no lookup uses because of a name conflict: a built-in pack's name, or the
    other claims of a name two distributions make (unless env or a registration overrides it)."""
    used = {s.name: s for s in pack_sources()}
    return tuple(
        s
        for s in _entry_point_sources()
        if s.problem is not None
        and used[s.name] != s
        and used[s.name].origin in ("built-in", "entry point")
    )


def pack_names() -> tuple[str, ...]:
    return tuple(source.name for source in pack_sources())


@cache
def get_pack(name: str) -> Pack:
    """The pack called ``name``: ``UnknownPack`` if none is, ``PackLoadError`` if it is broken.
    Only a pack that loaded is cached."""
    source = next((s for s in pack_sources() if s.name == name), None)
    if source is None:
        late = next((s for s in _read_entry_points() if s.name == name), None)
        if late is not None and late.problem is None:
            raise PackInstalledAfterStart(late)
        raise UnknownPack(f"unknown pack {name!r}; installed: {', '.join(pack_names())}")
    if source.problem is not None:
        raise PackLoadError(source, source.problem)
    return _load(source)


def loaded_packs() -> tuple[dict[str, Pack], dict[str, PackLoadError]]:
    """Every installed pack that loads, by name, and the error of each one that does not (a
    missing dependency, a removed editable install): one broken pack is one pack down."""
    loaded: dict[str, Pack] = {}
    broken: dict[str, PackLoadError] = {}
    for name in pack_names():
        try:
            loaded[name] = get_pack(name)
        except PackLoadError as exc:
            broken[name] = exc
    return loaded, broken


def _load(source: PackSource) -> Pack:
    module, _, attribute = source.target.partition(":")
    try:
        # Through the import statement's hook, not importlib's bootstrap: when a workflow replaying
        # a run prepared before frozen terms asks (imports passed through), this is the worker's
        # module, never a half re-import inside the sandbox.
        found: object = __import__(module, fromlist=["__name__"])
        for part in attribute.split(".") if attribute else ():
            found = getattr(found, part)
    except Exception as exc:  # a third party's import can raise anything; say what and where
        raise PackLoadError(source, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(found, Pack):
        raise PackLoadError(
            source, f"{source.target} is a {type(found).__name__}, not an agentledger Pack"
        )
    if found.name != source.name:
        raise PackLoadError(source, f"the pack calls itself {found.name!r}")
    return found


@cache
def _entry_point_sources() -> tuple[PackSource, ...]:
    """The entry points as this process first read them (``rediscover`` reads them again)."""
    return _read_entry_points()


def _read_entry_points() -> tuple[PackSource, ...]:
    importlib.invalidate_caches()
    found: dict[tuple[str, str], PackSource] = {}
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = point.dist
        target = f"{point.module}:{point.attr}" if point.attr else point.module
        name = dist.name if dist is not None else "an unknown distribution"
        version = dist.version if dist is not None else "?"
        # The same distribution seen twice on sys.path (e.g. an editable install) is one claim.
        claim = PackSource(point.name, target, "entry point", name, version)
        found.setdefault((point.name, name), claim)
    return tuple(_with_conflicts(list(found.values())))


def _with_conflicts(sources: list[PackSource]) -> Iterable[PackSource]:
    for source in sources:
        others = [s.describe() for s in sources if s.name == source.name and s != source]
        if source.name in BUILT_IN_PACKS:
            yield replace(source, problem=f"{source.name!r} is the name of a built-in pack")
        elif others:
            yield replace(source, problem=f"the name is also claimed by {', '.join(others)}")
        else:
            yield source


def _checked_name(name: str) -> str:
    if not name or name != name.strip() or "=" in name or "," in name:
        raise ConfigError(f"{name!r} is not a pack name")
    return name


def _checked_target(name: str, target: str) -> str:
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ConfigError(f"pack {name!r}: {target!r} is not module:attribute")
    return target
