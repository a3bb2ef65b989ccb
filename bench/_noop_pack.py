"""A benchmark pack: one no-op read tool and a scripted model that calls it N times.

Everything else (manifest, context build, governance, ledger appends, receipts) is the real
runtime, so the step loop measured here is the one production runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, JsonValue
from sqlalchemy.engine import Engine

from activities.ports import ModelReply, ModelUsage, ToolCall, ToolOutput
from domain.context import EXAMPLE_BUDGET, SUPPORT_STEP_PROFILES, ContextPacket
from domain.manifest import AgentProfile, Instruction, ModelProfile, ToolGrant
from domain.principal import Principal
from domain.tools import ToolContract
from domain.workorder import Budget, WorkOrder
from packs import Pack


class NoopArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    i: int


class NoopOut(BaseModel):
    i: int


NOOP = ToolContract(
    name="noop",
    version="1",
    description="does nothing",
    input_model=NoopArgs,
    output_model=NoopOut,
    scope="read",
    risk="low",
    required_scope="bench",
)


@dataclass(frozen=True)
class Noop:
    contract: ToolContract = NOOP

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        return ToolOutput(status="succeeded", output={"i": call.arguments.model_dump()["i"]})

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return None


class LoopModel:
    """Calls ``noop`` until the run has done ``steps`` calls, then answers."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        ws = packet.working_state
        done = ws.get("completed_actions")
        count = len(done) if isinstance(done, list) else 0
        limit = int(profile.settings.get("steps", 10))  # type: ignore[arg-type]
        output: dict[str, JsonValue]
        if packet.step == "draft_answer":
            output = {"type": "answer", "answer": f"done after {count} calls"}
        elif count < limit:
            output = {"type": "call_tool", "proposal": {"tool": "noop", "arguments": {"i": count}}}
        else:
            output = {"type": "proceed_to_answer"}
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


STEPS = 20
_choose = SUPPORT_STEP_PROFILES["choose_next_action"].model_copy(
    update={"allowed_tools": ("noop",)}
)
_answer = SUPPORT_STEP_PROFILES["draft_answer"].model_copy(
    update={"proposable_actions": (), "conditional_kinds": ()}
)
PROFILE = AgentProfile(
    profile_id="bench-loop",
    agent_version="bench-1",
    instructions=(Instruction(id="instr:loop", text="Call noop until told to stop."),),
    model=ModelProfile(name="loop", provider="loop", model="loop", settings={"steps": STEPS}),
    tool_grants=(ToolGrant.of(NOOP, ["choose_next_action"]),),
    step_profiles=(_choose, _answer),
    token_budget=EXAMPLE_BUDGET,
    policy_bundle="none",
    budgets=Budget(steps=STEPS + 5, tool_calls=STEPS + 1, tokens=10_000_000),
)

BENCH_PRINCIPAL = Principal(user_id="bench", tenant_id="bench", scopes=frozenset({"bench"}))


def make_work_order(request: str, principal: Principal) -> WorkOrder:
    return WorkOrder(
        objective="loop",
        request_text=request,
        principal=principal,
        pack="bench",
        agent_profile_id=PROFILE.profile_id,
        budget=PROFILE.budgets,
    )


PACK = Pack(
    name="bench",
    profile=PROFILE,
    tools={"noop": Noop()},
    principals=(BENCH_PRINCIPAL,),
    models={"loop": LoopModel()},
    install=lambda engine: None,
    seed=lambda engine: False,
    make_work_order=make_work_order,
    policy_version=lambda engine: "none",
)
