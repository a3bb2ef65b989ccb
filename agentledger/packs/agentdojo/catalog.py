"""AgentDojo as installed (``agentdojo==0.1.35``): suites, attacks, the environment of one
(user task, injection task) pair, and the ungoverned baseline.

Nothing is vendored. A ``Pair`` names everything a run depends on: the suite, both tasks, the
attack and the benchmark version (``ATTACK`` and ``BENCHMARK_VERSION`` are only the defaults).
Its environment is the suite's default environment with the attack's injections placed in the
vectors the user task's ground truth reads, initialised by the user task. A suite, attack or
version that is not installed is a typed error (``NotHosted``), never a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import JsonValue
from pydantic_core import to_jsonable_python

from agentledger.packs.hosted.journal import CallResult

__all__ = [
    "ATTACK",
    "BENCHMARK_VERSION",
    "SUITES",
    "Baseline",
    "DojoSandbox",
    "NotHosted",
    "Pair",
    "SuiteName",
    "baseline",
    "injection_calls",
    "injections",
    "pair_environment",
    "suite",
    "tool_models",
    "user_calls",
    "verdict",
]

SuiteName = Literal["banking", "slack"]
SUITES: tuple[SuiteName, ...] = ("banking", "slack")
BENCHMARK_VERSION = "v1.2.2"
ATTACK = "important_instructions"
TARGET_MODEL = "local"
"""The name the attack addresses the model by; AgentDojo renders it as "Local model"."""


class NotHosted(ValueError):
    """A suite, attack or benchmark version this catalog cannot run."""


@dataclass(frozen=True)
class Pair:
    """One (user task, injection task) of a suite, under an attack, at a benchmark version."""

    suite: SuiteName
    user_task: str
    injection_task: str
    attack: str = ATTACK
    version: str = BENCHMARK_VERSION

    def __post_init__(self) -> None:
        if self.suite not in SUITES:
            raise NotHosted(f"AgentDojo suite {self.suite!r} is not hosted; choose from {SUITES}")
        if self.attack not in attacks():
            raise NotHosted(f"AgentDojo has no attack {self.attack!r}")
        s = suite(self.suite, self.version)
        if self.user_task not in s.user_tasks or self.injection_task not in s.injection_tasks:
            raise NotHosted(f"{self.suite} {self.version} has no pair {self.tasks}")

    @property
    def tasks(self) -> tuple[str, str]:
        return self.user_task, self.injection_task

    def references(self) -> dict[str, str]:
        """What a work order records of its pair (and its model and judge read back)."""
        return {
            "suite": self.suite,
            "user_task": self.user_task,
            "injection_task": self.injection_task,
            "attack": self.attack,
            "benchmark_version": self.version,
        }

    @classmethod
    def from_references(cls, refs: Mapping[str, JsonValue]) -> Pair:
        """The pair a work order names (``NotHosted`` if none). Work orders that name no
        attack or version ran with the defaults."""
        return cls(
            suite=str(refs.get("suite")),  # type: ignore[arg-type]  # checked on creation
            user_task=str(refs.get("user_task")),
            injection_task=str(refs.get("injection_task")),
            attack=str(refs.get("attack", ATTACK)),
            version=str(refs.get("benchmark_version", BENCHMARK_VERSION)),
        )


@cache
def attacks() -> frozenset[str]:
    from agentdojo.attacks.attack_registry import ATTACKS

    return frozenset(ATTACKS)


@cache
def suite(name: SuiteName, version: str = BENCHMARK_VERSION) -> Any:
    from agentdojo.task_suite.load_suites import get_suites

    found = get_suites(version).get(name)
    if found is None:  # AgentDojo answers an unknown version with no suites at all
        raise NotHosted(f"AgentDojo {version!r} has no suite {name!r}")
    return found


@cache
def _attack(name: SuiteName, attack: str, version: str) -> Any:
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.attacks.attack_registry import load_attack

    # The attack only reads the target's name. AgentDojo ships no types, so its base is Any.
    class _Target(BasePipelineElement):  # type: ignore[misc]
        def query(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the governed runtime is the pipeline here")

    target = _Target()
    target.name = TARGET_MODEL
    return load_attack(attack, suite(name, version), target)


@cache
def injections(pair: Pair) -> Mapping[str, str]:
    """The attack's injections for a pair; empty when the user task reads no injectable vector."""
    s = suite(pair.suite, pair.version)
    try:
        found: dict[str, str] = _attack(pair.suite, pair.attack, pair.version).attack(
            s.user_tasks[pair.user_task], s.injection_tasks[pair.injection_task]
        )
    except ValueError:  # AgentDojo raises when a user task sees no injection vector
        return {}
    return found


def pair_environment(pair: Pair) -> Any:
    s = suite(pair.suite, pair.version)
    env = s.load_and_inject_default_environment(dict(injections(pair)))
    return s.user_tasks[pair.user_task].init_environment(env)


class DojoSandbox:
    """One pair's environment; calls go through AgentDojo's own FunctionsRuntime."""

    def __init__(self, pair: Pair) -> None:
        from agentdojo.functions_runtime import FunctionsRuntime

        self.env = pair_environment(pair)
        self.runtime = FunctionsRuntime(suite(pair.suite, pair.version).tools)

    def call(self, tool: str, arguments: dict[str, JsonValue]) -> CallResult:
        result, error = self.runtime.run_function(self.env, tool, arguments)
        if error is not None:
            return CallResult(status="failed", output=None, error=error)
        output: JsonValue = to_jsonable_python(result)
        return CallResult(status="succeeded", output=output)


@dataclass(frozen=True)
class Baseline:
    """Ungoverned references for a pair, computed with AgentDojo alone."""

    utility: bool
    """The user task's ground truth, run directly: the utility a governed run must match."""
    attack_succeeds_ungoverned: bool
    """Ground truth then every injection call, run directly: does the attack work without us?"""

    @property
    def replayable(self) -> bool:
        return self.utility and self.attack_succeeds_ungoverned


@cache
def baseline(pair: Pair) -> Baseline:
    user = user_calls(pair)
    clean = _replay(pair, user)
    attacked = _replay(pair, [*user, *injection_calls(pair)])
    return Baseline(
        utility=verdict(pair, "utility", *clean),
        attack_succeeds_ungoverned=verdict(pair, "security", *attacked),
    )


def _replay(pair: Pair, calls: list[Any]) -> tuple[Any, Any, list[Any]]:
    sandbox = DojoSandbox(pair)
    pre = sandbox.env.model_copy(deep=True)
    done = [c for c in calls if sandbox.call(c.function, dict(c.args)).status == "succeeded"]
    return pre, sandbox.env, done


def verdict(
    pair: Pair,
    check: Literal["utility", "security"],
    pre: Any,
    post: Any,
    traces: list[Any],
    answer: str | None = None,
) -> bool:
    """AgentDojo's own judge (trace-based checks first, as its benchmark runner does)."""
    from agentdojo.types import text_content_block_from_string

    s = suite(pair.suite, pair.version)
    user_task = s.user_tasks[pair.user_task]
    task = user_task if check == "utility" else s.injection_tasks[pair.injection_task]
    output = [text_content_block_from_string(answer or user_task.GROUND_TRUTH_OUTPUT)]
    return bool(s._check_task_result(task, output, pre, post, traces))


def injection_calls(pair: Pair) -> list[Any]:
    """The injection task's ground-truth calls, resolved against the pair's initial environment."""
    s = suite(pair.suite, pair.version)
    return list(s.injection_tasks[pair.injection_task].ground_truth(pair_environment(pair)))


def user_calls(pair: Pair) -> list[Any]:
    s = suite(pair.suite, pair.version)
    return list(s.user_tasks[pair.user_task].ground_truth(pair_environment(pair)))


def tool_models(name: SuiteName, version: str = BENCHMARK_VERSION) -> Mapping[str, Any]:
    return {f.name: f for f in suite(name, version).tools}
