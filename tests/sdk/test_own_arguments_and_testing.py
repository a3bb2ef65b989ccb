"""What the SDK gained for the reference pack: a tool's own input model (``arguments=``), a
grant planner and an agent version on ``AgentPack``, and ``agentledger.sdk.testing``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Self

import pytest
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from sqlalchemy import create_engine

from agentledger.sdk import (
    AgentPack,
    ApprovalRule,
    ArgumentBound,
    Pack,
    PackDefinitionError,
    PacketView,
    PlanningInput,
    Principal,
    RoleAbove,
    ScriptedModel,
    ToolContext,
    ToolFailure,
    ToolResult,
    WorkGrant,
    answer,
    call_tool,
    step,
)
from agentledger.sdk.testing import (
    decide,
    memory_system,
    packet,
    packet_view,
    reconcile_tool,
    run_tool,
)

WHO = Principal(user_id="usr_1", tenant_id="t1")


class Transfer(BaseModel):
    """Arguments with a cross-field rule no single parameter's type can state."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    source: str = Field(pattern=r"^acc_[0-9]+$")
    target: str = Field(pattern=r"^acc_[0-9]+$")
    amount: float = Field(strict=True, gt=0)

    @model_validator(mode="after")
    def _two_accounts(self) -> Self:
        if self.source == self.target:
            raise ValueError("a transfer needs two accounts")
        return self


class Moved(BaseModel):
    transfer_id: str


def _think(view: PacketView) -> dict[str, Any]:
    return call_tool("transfer", {"source": "acc_1", "target": "acc_2", "amount": 5.0})


SCRIPT = ScriptedModel("bank-script", {"think": _think, "reply": lambda v: answer(v.request)})


class OnlyTransfers:
    def plan(self, given: PlanningInput) -> tuple[WorkGrant, ...]:
        bound = (ArgumentBound(argument="source", allowed=("acc_1",)),)
        return (WorkGrant(tool="transfer", bounds=bound),)


def bank(**options: Any) -> tuple[AgentPack, Pack]:
    pack = AgentPack(
        "bank",
        version="3",
        objective="move money",
        instructions=["Move money only between the customer's accounts."],
        model=SCRIPT.profile,
        models=[SCRIPT],
        steps=[step("think", tools=["transfer"], next=["reply"]), step("reply")],
        principals=[WHO],
        **options,
    )
    done: dict[str, str] = {}

    def find(ctx: ToolContext) -> ToolResult[Moved] | None:
        found = done.get(ctx.key)
        return None if found is None else ToolResult(Moved(transfer_id=found), receipt_id=found)

    @pack.write_tool(
        description="Move money between two of the customer's accounts.",
        required_scope="money:move",
        reconcile=find,
        arguments=Transfer,
        resource_argument="source",
        approval=ApprovalRule(
            kind="always", amount_argument="amount", roles_above=(RoleAbove(role="boss", above=9),)
        ),
    )
    def transfer(ctx: ToolContext, args: Transfer) -> ToolResult[Moved] | ToolFailure:
        assert isinstance(args, Transfer)  # the model itself, validators run
        done.setdefault(ctx.key, f"tr_{ctx.key}")
        return find(ctx) or ToolFailure("lost", "not stored")

    return pack, pack.build()


def test_a_tool_may_take_its_own_input_model_whole() -> None:
    _, built = bank()
    contract = built.tools["transfer"].contract
    assert contract.input_model is Transfer
    engine = memory_system(built)
    moved = run_tool(
        built,
        "transfer",
        engine,
        {"source": "acc_1", "target": "acc_2", "amount": 5.0},
        principal=WHO,
        key="k1",
    )
    assert (moved.status, moved.receipt_id, moved.output) == (
        "succeeded",
        "tr_k1",
        {"transfer_id": "tr_k1"},
    )
    same: dict[str, JsonValue] = {"source": "acc_1", "target": "acc_2", "amount": 5.0}
    found = reconcile_tool(built, "transfer", engine, same, principal=WHO, key="k1")
    assert found is not None and found.receipt_id == "tr_k1"
    assert reconcile_tool(built, "transfer", engine, same, principal=WHO, key="k2") is None
    with pytest.raises(ValidationError, match="two accounts"):
        run_tool(built, "transfer", engine, {**same, "target": "acc_1"}, principal=WHO, key="k")


def test_a_tool_stating_its_model_must_take_exactly_that_model() -> None:
    pack = AgentPack(
        "odd",
        version="1",
        objective="o",
        instructions=["i"],
        model=SCRIPT.profile,
        steps=[step("reply")],
    )
    with pytest.raises(PackDefinitionError, match="one parameter annotated Transfer"):

        @pack.read_tool(description="d", required_scope="s", arguments=Transfer)
        def peek(ctx: ToolContext, source: str, target: str) -> Moved:
            return Moved(transfer_id=source)

    with pytest.raises(PackDefinitionError, match="names arguments it does not take"):

        @pack.read_tool(
            description="d", required_scope="s", arguments=Transfer, resource_argument="account"
        )
        def look(ctx: ToolContext, args: Transfer) -> Moved:
            return Moved(transfer_id=args.source)


def test_an_amount_tiered_rule_must_name_an_amount_the_tool_takes() -> None:
    pack = AgentPack(
        "tiers",
        version="1",
        objective="o",
        instructions=["i"],
        model=SCRIPT.profile,
        steps=[step("reply")],
    )
    tiered = ApprovalRule(
        kind="always", amount_argument="sum", roles_above=(RoleAbove(role="b", above=1),)
    )
    with pytest.raises(PackDefinitionError, match="names arguments it does not take"):

        @pack.write_tool(description="d", required_scope="s", reconcile=None, approval=tiered)
        def pay(ctx: ToolContext, amount: float) -> Moved:
            return Moved(transfer_id="x")


def test_a_planner_bounds_each_work_orders_grants_and_the_agent_version_is_the_packs() -> None:
    declared, built = bank(planner=OnlyTransfers(), agent_version="bank-agent-v3")
    assert built.profile.agent_version == "bank-agent-v3"
    order = built.make_work_order("move 5", WHO)
    assert order.grants is not None
    assert [(g.tool, g.bounds) for g in order.grants] == [
        ("transfer", (ArgumentBound(argument="source", allowed=("acc_1",)),))
    ]
    unplanned = declared.planned_work_order("move 5", WHO, None)
    assert unplanned.grants == bank()[1].make_work_order("move 5", WHO).grants
    assert bank()[1].profile.agent_version == "bank-3"


def test_the_write_engine_locks_as_the_ledger_does() -> None:
    engine = create_engine("sqlite://")
    ctx = ToolContext(engine, WHO, "op", "k", datetime.now(UTC), "t")
    assert ctx.write_engine().get_execution_options()["ledger_write"] is True


def test_a_packet_is_built_hashed_with_the_steps_tools_and_decided_by_the_packs_model() -> None:
    _, built = bank()
    seen = packet(built, "think", ["move 5 from acc_1"], {"references": {"source": "acc_1"}})
    assert seen.packet_hash == seen.compute_hash() != ""
    assert seen.tool_names() == ("transfer",) and seen.output_schema.name
    view = packet_view(built, "think", ["move 5 from acc_1", "please"])
    assert (view.request, view.user_texts()) == (
        "move 5 from acc_1",
        ("move 5 from acc_1", "please"),
    )
    assert view.reference("source") is None
    assert decide(built, seen)["type"] == "call_tool"
    with pytest.raises(KeyError, match="no step 'nope'"):
        packet(built, "nope")


def test_the_testing_helpers_name_what_a_pack_lacks() -> None:
    _, built = bank()
    engine = memory_system(built)
    with pytest.raises(KeyError, match="declares no tool 'withdraw'"):
        run_tool(built, "withdraw", engine, {}, principal=WHO)
    with pytest.raises(AssertionError, match="seeded its samples twice"):
        memory_system(Pack(**{**built.__dict__, "seed": lambda engine: True}))
    modelless = Pack(**{**built.__dict__, "models": {}})
    with pytest.raises(KeyError, match="ships no model"):
        decide(modelless, packet(built, "think"))
