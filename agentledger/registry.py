"""The installed packs, by name: the composition root's registry (``AGENTLEDGER_PACKS`` adds
a user's or a benchmark's pack as ``name=module:attribute``). Activities and workflows never
look packs up; the root hands the activities this lookup."""

from __future__ import annotations

import importlib
from functools import cache

from agentledger.activities.ports import Pack, UnknownPack

__all__ = ["UnknownPack", "get_pack", "pack_names", "register_pack"]

_REGISTRY = {"support": "agentledger.packs.support:PACK"}


def register_pack(name: str, target: str) -> None:
    """Make another pack (``module:attribute``) available, e.g. a benchmark's or a user's."""
    _REGISTRY[name] = target
    get_pack.cache_clear()


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
