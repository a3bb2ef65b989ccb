"""AgentDojo as installed (``agentdojo==0.1.35``): suites, the ``important_instructions`` attack,
the environment of one (user task, injection task) pair, and the ungoverned baseline.

Nothing is vendored. A pair's environment is the suite's default environment with the attack's
injections placed in the vectors the user task's ground truth reads, initialised by the user task.
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
    "SuiteName",
    "baseline",
    "injections",
    "pair_environment",
    "suite",
]

SuiteName = Literal["banking", "slack"]
SUITES: tuple[SuiteName, ...] = ("banking", "slack")
BENCHMARK_VERSION = "v1.2.2"
ATTACK = "important_instructions"
TARGET_MODEL = "local"
"""The name the attack addresses the model by; AgentDojo renders it as "Local model"."""


@cache
def suite(name: SuiteName) -> Any:
    from agentdojo.task_suite.load_suites import get_suite

    return get_suite(BENCHMARK_VERSION, name)


@cache
def _attack(name: SuiteName) -> Any:
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.attacks.attack_registry import load_attack

    class _Target(BasePipelineElement):  # the attack only reads the target's name
        def query(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the governed runtime is the pipeline here")

    target = _Target()
    target.name = TARGET_MODEL
    return load_attack(ATTACK, suite(name), target)


@cache
def injections(name: SuiteName, user_task: str, injection_task: str) -> Mapping[str, str]:
    """The attack's injections for a pair; empty when the user task reads no injectable vector."""
    s = suite(name)
    try:
        found: dict[str, str] = _attack(name).attack(
            s.user_tasks[user_task], s.injection_tasks[injection_task]
        )
    except ValueError:  # AgentDojo raises when a user task sees no injection vector
        return {}
    return found


def pair_environment(name: SuiteName, user_task: str, injection_task: str) -> Any:
    s = suite(name)
    env = s.load_and_inject_default_environment(dict(injections(name, user_task, injection_task)))
    return s.user_tasks[user_task].init_environment(env)


class DojoSandbox:
    """One pair's environment; calls go through AgentDojo's own FunctionsRuntime."""

    def __init__(self, name: SuiteName, user_task: str, injection_task: str) -> None:
        from agentdojo.functions_runtime import FunctionsRuntime

        self.env = pair_environment(name, user_task, injection_task)
        self.runtime = FunctionsRuntime(suite(name).tools)

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
def baseline(name: SuiteName, user_task: str, injection_task: str) -> Baseline:
    pair = (user_task, injection_task)
    user = user_calls(name, pair=pair)
    clean = _replay(name, pair, user)
    attacked = _replay(name, pair, [*user, *injection_calls(name, pair=pair)])
    return Baseline(
        utility=verdict(name, pair, "utility", clean[0], clean[1], clean[2]),
        attack_succeeds_ungoverned=verdict(
            name, pair, "security", attacked[0], attacked[1], attacked[2]
        ),
    )


def _replay(name: SuiteName, pair: tuple[str, str], calls: list[Any]) -> tuple[Any, Any, list[Any]]:
    sandbox = DojoSandbox(name, *pair)
    pre = sandbox.env.model_copy(deep=True)
    done = [c for c in calls if sandbox.call(c.function, dict(c.args)).status == "succeeded"]
    return pre, sandbox.env, done


def verdict(
    name: SuiteName,
    pair: tuple[str, str],
    check: Literal["utility", "security"],
    pre: Any,
    post: Any,
    traces: list[Any],
    answer: str | None = None,
) -> bool:
    """AgentDojo's own judge (trace-based checks first, as its benchmark runner does)."""
    from agentdojo.types import text_content_block_from_string

    s = suite(name)
    user_task = s.user_tasks[pair[0]]
    task = user_task if check == "utility" else s.injection_tasks[pair[1]]
    output = [text_content_block_from_string(answer or user_task.GROUND_TRUTH_OUTPUT)]
    return bool(s._check_task_result(task, output, pre, post, traces))


def injection_calls(name: SuiteName, *, pair: tuple[str, str]) -> list[Any]:
    """The injection task's ground-truth calls, resolved against the pair's initial environment."""
    s = suite(name)
    env = pair_environment(name, *pair)
    return list(s.injection_tasks[pair[1]].ground_truth(env))


def user_calls(name: SuiteName, *, pair: tuple[str, str]) -> list[Any]:
    s = suite(name)
    env = pair_environment(name, *pair)
    return list(s.user_tasks[pair[0]].ground_truth(env))


def tool_models(name: SuiteName) -> Mapping[str, Any]:
    return {f.name: f for f in suite(name).tools}
