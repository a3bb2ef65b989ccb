"""The manifest hash: any change to what an attempt runs under changes it, nothing else does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentledger.domain.manifest import AgentProfile, resolve_manifest
from agentledger.packs.support import PACK
from agentledger.packs.support.profile import SUPPORT_PROFILE
from agentledger.packs.support.steps import SUPPORT_STEP_PROFILES

INPUTS = {
    "attempt_id": "att-1",
    "work_order_digest": "sha256:" + "ab" * 32,
    "memory_snapshot": "memory:empty",
    "policy_version": "returns-2026-08",
}
CONTRACTS = PACK.contracts
BASE_HASH = resolve_manifest(SUPPORT_PROFILE, **INPUTS, contracts=CONTRACTS).hash
STEP_NAMES = tuple(SUPPORT_STEP_PROFILES)
REPO = Path(__file__).resolve().parents[2]

Draw = Callable[[st.SearchStrategy[Any]], Any]
Variant = tuple[AgentProfile, dict[str, str]]


def other_text(original: str) -> st.SearchStrategy[str]:
    return st.text(min_size=1, max_size=12).filter(lambda t: t != original)


def with_profile(**update: Any) -> Variant:
    return SUPPORT_PROFILE.model_copy(update=update), INPUTS


def replace_at(items: tuple[Any, ...], index: int, item: Any) -> tuple[Any, ...]:
    return (*items[:index], item, *items[index + 1 :])


def instruction_text(draw: Draw) -> Variant:
    i = draw(st.integers(0, len(SUPPORT_PROFILE.instructions) - 1))
    old = SUPPORT_PROFILE.instructions[i]
    new = old.model_copy(update={"text": old.text + draw(st.text(min_size=1, max_size=8))})
    return with_profile(instructions=replace_at(SUPPORT_PROFILE.instructions, i, new))


def model_settings(draw: Draw) -> Variant:
    settings = draw(
        st.dictionaries(
            st.sampled_from(["temperature", "top_p", "seed"]), st.integers(0, 100), min_size=1
        )
    )
    return with_profile(model=SUPPORT_PROFILE.model.model_copy(update={"settings": settings}))


def _grant(draw: Draw, field: str, value: Callable[[Any], st.SearchStrategy[Any]]) -> Variant:
    grants = SUPPORT_PROFILE.tool_grants
    i = draw(st.integers(0, len(grants) - 1))
    new = grants[i].model_copy(update={field: draw(value(getattr(grants[i], field)))})
    return with_profile(tool_grants=replace_at(grants, i, new))


def grant_schema_hash(draw: Draw) -> Variant:
    return _grant(
        draw,
        "schema_hash",
        lambda old: (
            st.binary(min_size=32, max_size=32)
            .map(lambda b: "sha256:" + b.hex())
            .filter(lambda h: h != old)
        ),
    )


def grant_steps(draw: Draw) -> Variant:
    return _grant(
        draw,
        "steps",
        lambda old: (
            st.lists(st.sampled_from(STEP_NAMES), min_size=1, max_size=3, unique=True)
            .map(tuple)
            .filter(lambda steps: steps != old)
        ),
    )


def step_profile(draw: Draw) -> Variant:
    steps = SUPPORT_PROFILE.step_profiles
    i = draw(st.integers(0, len(steps) - 1))
    old = steps[i]
    update = draw(
        st.sampled_from(
            [
                {"inject_current_date": not old.inject_current_date},
                {"allowed_tools": (*old.allowed_tools, "get_invoice")},
                {"section_tokens": {**old.section_tokens, "evidence": 777}},
                {"required_kinds": (*old.required_kinds, "memory")},
            ]
        )
    )
    return with_profile(step_profiles=replace_at(steps, i, old.model_copy(update=update)))


def budgets(draw: Draw) -> Variant:
    field = draw(st.sampled_from(["steps", "tool_calls", "tokens", "wall_seconds"]))
    old = getattr(SUPPORT_PROFILE.budgets, field)
    delta = draw(st.integers(1, 1000))
    return with_profile(budgets=SUPPORT_PROFILE.budgets.model_copy(update={field: old + delta}))


def token_budget(draw: Draw) -> Variant:
    old = SUPPORT_PROFILE.token_budget
    margin = old.safety_margin - draw(st.integers(1, 500))
    changed = type(old).model_validate({**old.model_dump(), "safety_margin": margin})
    return with_profile(token_budget=changed)


def policy_bundle(draw: Draw) -> Variant:
    return with_profile(policy_bundle=draw(other_text(SUPPORT_PROFILE.policy_bundle)))


def resolve_input(name: str) -> Callable[[Draw], Variant]:
    def change(draw: Draw) -> Variant:
        return SUPPORT_PROFILE, {**INPUTS, name: draw(other_text(INPUTS[name]))}

    return change


CHANGES: dict[str, Callable[[Draw], Variant]] = {
    "instruction text": instruction_text,
    "model settings": model_settings,
    "a grant's schema hash": grant_schema_hash,
    "a grant's steps": grant_steps,
    "a step profile": step_profile,
    "budgets": budgets,
    "token budget": token_budget,
    "policy bundle": policy_bundle,
    **{name: resolve_input(name) for name in INPUTS},
}


@pytest.mark.parametrize("component", sorted(CHANGES))
@given(data=st.data())
def test_changing_any_component_changes_the_manifest_hash(
    component: str, data: st.DataObject
) -> None:
    profile, inputs = CHANGES[component](data.draw)
    assert resolve_manifest(profile, **inputs, contracts=CONTRACTS).hash != BASE_HASH, component


def test_identical_inputs_give_the_identical_hash() -> None:
    copy = AgentProfile.model_validate_json(SUPPORT_PROFILE.model_dump_json())
    assert copy is not SUPPORT_PROFILE
    assert resolve_manifest(copy, **dict(INPUTS), contracts=CONTRACTS).hash == BASE_HASH
    assert resolve_manifest(SUPPORT_PROFILE, **INPUTS, contracts=CONTRACTS).hash == BASE_HASH


def test_the_hash_is_stable_across_processes_and_hash_seeds() -> None:
    script = (
        "import json, sys\n"
        "from agentledger.domain.manifest import resolve_manifest\n"
        "from agentledger.packs.support import PACK\n"
        "from agentledger.packs.support.profile import SUPPORT_PROFILE\n"
        "inputs = json.loads(sys.argv[1])\n"
        "print(resolve_manifest(SUPPORT_PROFILE, **inputs, contracts=PACK.contracts).hash)\n"
    )
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, json.dumps(INPUTS)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        assert done.stdout.strip() == BASE_HASH, f"PYTHONHASHSEED={seed}"
