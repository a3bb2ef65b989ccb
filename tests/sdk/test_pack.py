"""AgentPack.build(): the runtime's Pack from a declaration, and every inconsistency refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import create_engine

from agentledger.domain.manifest import resolve_manifest
from agentledger.sdk import (
    AgentPack,
    ConversationPolicy,
    ModelProfile,
    Pack,
    PackDefinitionError,
    PacketView,
    Principal,
    ScriptedModel,
    StepGraph,
    StepNode,
    StepProfile,
    ToolContext,
    answer,
    proceed,
    step,
)

MODEL = ModelProfile(name="m", provider="m", model="m-1")
WHO = Principal(user_id="usr_1", tenant_id="t1")


class Thing(BaseModel):
    thing_id: str


def declare(pack: AgentPack) -> AgentPack:
    @pack.read_tool(description="Read a thing.", required_scope="things:read")
    def get_thing(ctx: ToolContext, thing_id: str) -> Thing:
        return Thing(thing_id=thing_id)

    @pack.write_tool(description="Drop a thing.", required_scope="things:write", reconcile=None)
    def drop_thing(ctx: ToolContext, thing_id: str) -> Thing:
        return Thing(thing_id=thing_id)

    return pack


def pack_with(**overrides: Any) -> AgentPack:
    options: dict[str, Any] = {
        "version": "2.0.0",
        "objective": "handle things",
        "instructions": ["Read before you drop."],
        "model": MODEL,
        "steps": [
            step("ask", tools=["get_thing"], next=["answer"], ask_user=True),
            step("answer", proposes=["drop_thing"]),
        ],
        "conversation": ConversationPolicy(idle_timeout_seconds=60),
        **overrides,
    }
    return declare(AgentPack("things", **options))


def test_build_returns_the_runtimes_pack_with_the_graph_its_steps_draw() -> None:
    built = pack_with().build()
    assert isinstance(built, Pack) and built.name == "things"
    profile = built.profile
    assert profile.step_graph == StepGraph(
        entry="ask",
        nodes=(
            StepNode(name="ask", next=("answer",), ask_user=True),
            StepNode(name="answer"),
        ),
    )
    assert profile.conversation == ConversationPolicy(idle_timeout_seconds=60)
    assert [(s.name, s.output_schema) for s in profile.step_profiles] == [
        ("ask", "next_action"),
        ("answer", "answer"),
    ]
    assert {g.name: g.steps for g in profile.tool_grants} == {
        "get_thing": ("ask",),
        "drop_thing": ("answer",),
    }
    assert [i.text for i in profile.instructions] == ["Read before you drop."]
    assert (profile.profile_id, profile.agent_version) == ("things", "things-2.0.0")
    assert set(built.contracts) == {"get_thing", "drop_thing"}
    assert built.policy_version(create_engine("sqlite://")) == "things-policies:2.0.0"


def test_the_manifest_freezes_the_sdk_tools_terms_like_any_packs() -> None:
    built = pack_with().build()
    manifest = resolve_manifest(
        built.profile,
        contracts=built.contracts,
        attempt_id="att_1",
        work_order_digest="sha256:x",
        memory_snapshot="none",
        policy_version="p1",
    )
    terms = manifest.terms["drop_thing"]
    assert (terms.scope, terms.risk, terms.reconcilable) == ("write", "consequential", False)
    assert terms.schema_hash == built.contracts["drop_thing"].schema_hash
    assert manifest.step_graph == built.profile.step_graph
    terms.input_model.model_validate({"thing_id": "t1"})
    with pytest.raises(ValueError, match="schema error"):
        terms.input_model.model_validate({"thing_id": 5})


def test_the_work_order_carries_the_packs_references() -> None:
    pack = pack_with()

    @pack.references
    def refs(request: str, principal: Principal) -> dict[str, str]:
        return {"thing_id": request.split()[-1]}

    order = pack.build().make_work_order("drop thing t42", WHO)
    assert (order.pack, order.agent_profile_id, order.objective) == (
        "things",
        "things",
        "handle things",
    )
    assert order.references == {"thing_id": "t42"} and order.principal == WHO


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"conversation": None}, "may ask the user, but the profile has no conversation"),
        ({"steps": []}, "at least one step"),
        (
            {"steps": [step("ask", tools=["get_thing"], next=["answer"]), step("answer")]},
            "no step may call or propose them: \\['drop_thing'\\]",
        ),
        (
            {"steps": [step("ask", tools=["get_thing", "nope"], next=["answer"]), step("answer")]},
            "tool 'nope', which is not declared",
        ),
        (
            {
                "steps": [
                    step("ask", tools=["get_thing"], next=["answer"]),
                    step("answer", proposes=["drop_thing"]),
                    step("orphan"),
                ]
            },
            "unreachable",
        ),
        (
            {
                "steps": [
                    step("ask", tools=["get_thing"], next=["elsewhere"]),
                    step("answer", proposes=["drop_thing"]),
                ]
            },
            "unknown steps",
        ),
        (
            {"steps": [StepProfile(name="ask"), StepProfile(name="answer")]},
            "pass graph= or use step\\(\\)",
        ),
    ],
)
def test_a_pack_that_cannot_run_is_refused_at_build(
    overrides: dict[str, Any], problem: str
) -> None:
    with pytest.raises(PackDefinitionError, match=problem):
        pack_with(**overrides).build()


def test_an_explicit_graph_must_agree_with_the_steps() -> None:
    graph = StepGraph(
        entry="ask", nodes=(StepNode(name="ask", next=("answer",)), StepNode(name="answer"))
    )
    with pytest.raises(PackDefinitionError, match="differ from the graph"):
        pack_with(graph=graph).build()
    profiles = [
        StepProfile(name="ask", allowed_tools=("get_thing",), output_schema="next_action"),
        StepProfile(name="answer", proposable_actions=("drop_thing",)),
    ]
    built = pack_with(graph=graph, steps=profiles, conversation=None).build()
    assert built.profile.step_graph == graph


def test_a_step_that_proceeds_may_not_propose() -> None:
    with pytest.raises(PackDefinitionError, match="only an answering step"):
        step("ask", next=["answer"], proposes=["drop_thing"])
    with pytest.raises(PackDefinitionError, match="step 'ask'"):
        step("ask", next=["answer"], sees=("gossip",))  # type: ignore[arg-type]


def _ask(view: PacketView) -> dict[str, object]:
    return proceed("answer")


def test_a_scripted_model_must_script_every_step() -> None:
    partial = ScriptedModel("m", {"ask": _ask})
    with pytest.raises(PackDefinitionError, match="no script for steps \\['answer'\\]"):
        pack_with(models=[partial]).build()
    full = ScriptedModel("m", {"ask": _ask, "answer": lambda v: answer("done")})
    built = pack_with(models=[full], model=full.profile).build()
    assert built.models["m"] is full and built.profile.model.provider == "m"
    with pytest.raises(PackDefinitionError, match="scripts no step"):
        ScriptedModel("empty", {})


def test_build_is_once_and_returns_the_same_pack() -> None:
    pack = pack_with()
    assert pack.build() is pack.build()
    with pytest.raises(PackDefinitionError, match="after build"):
        pack.seed(lambda engine: True)
