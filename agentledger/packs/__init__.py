"""Domain packs: tools, policies, step profiles and a sample system of record per domain."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

from sqlalchemy.engine import Engine

from agentledger.activities.ports import ModelClient, ToolImplementation
from agentledger.domain.manifest import AgentProfile
from agentledger.domain.principal import Principal
from agentledger.domain.tools import ToolContract
from agentledger.domain.workorder import WorkOrder

__all__ = ["Pack", "UnknownPack", "contracts_for", "get_pack", "pack_names", "register_pack"]

_REGISTRY = {"support": "agentledger.packs.support:PACK"}


class UnknownPack(LookupError):
    pass


@dataclass(frozen=True)
class Pack:
    name: str
    profile: AgentProfile
    tools: Mapping[str, ToolImplementation]
    principals: tuple[Principal, ...]
    models: Mapping[str, ModelClient]
    install: Callable[[Engine], None]
    seed: Callable[[Engine], bool]
    make_work_order: Callable[[str, Principal], WorkOrder]
    policy_version: Callable[[Engine], str]

    @property
    def contracts(self) -> Mapping[str, ToolContract]:
        return {name: tool.contract for name, tool in self.tools.items()}


def register_pack(name: str, target: str) -> None:
    """Make another pack (``module:attribute``) available, e.g. a benchmark's or a user's."""
    _REGISTRY[name] = target
    get_pack.cache_clear()
    contracts_for.cache_clear()


def pack_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


@cache
def get_pack(name: str) -> Pack:
    target = _REGISTRY.get(name)
    if target is None:
        raise UnknownPack(f"unknown pack {name!r}; installed: {', '.join(_REGISTRY)}")
    module, attribute = target.split(":")
    pack: Pack = getattr(importlib.import_module(module), attribute)
    return pack


@cache
def contracts_for(name: str) -> Mapping[str, ToolContract]:
    return get_pack(name).contracts
