"""A benchmark pack: one no-op read tool and a scripted model that calls it N times.

Everything else (manifest, context build, governance, ledger appends, receipts) is the real
runtime, so the step loop measured here is the one production runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, JsonValue
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ModelReply, ModelUsage, ToolCall, ToolOutput
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import (
    AgentProfile,
    CompactionPolicy,
    Instruction,
    ModelProfile,
    ToolGrant,
)
from agentledger.domain.principal import Principal
from agentledger.domain.tools import EvidencePassage, ToolContract
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support.steps import SUPPORT_BUDGET, SUPPORT_STEP_PROFILES


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
    evidence_bytes: int = 0
    """Each call also returns a passage this long (evidence accumulates in the run's state)."""

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        i = call.arguments.model_dump()["i"]
        return ToolOutput(status="succeeded", output={"i": i}, evidence=self._passages(i))

    def _passages(self, i: int) -> tuple[EvidencePassage, ...]:
        if not self.evidence_bytes:
            return ()
        text = f"passage {i}: " + "x" * self.evidence_bytes
        return (
            EvidencePassage(
                source_id=f"bench-doc#{i}",
                revision="1",
                content_hash=sha256_hex(text),
                trust="approved_policy",
                title="bench doc",
                text=text,
            ),
        )

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return None


class LoopModel:
    """Calls ``noop`` until the run has done ``steps`` calls, then answers."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        ws = packet.working_state
        budget = ws.get("remaining_budget")
        left = budget.get("tool_calls_remaining") if isinstance(budget, dict) else None
        limit = int(profile.settings.get("steps", 10))  # type: ignore[arg-type]
        # The budget is steps + 1 tool calls; what is left says how many were made.
        count = limit + 1 - left if isinstance(left, int) else 0
        output: dict[str, JsonValue]
        if packet.step == "draft_answer":
            output = {"type": "answer", "answer": f"done after {count} calls"}
        elif count < limit:
            output = {"type": "call_tool", "proposal": {"tool": "noop", "arguments": {"i": count}}}
        else:
            output = {"type": "proceed_to_answer"}
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


_choose = SUPPORT_STEP_PROFILES["choose_next_action"].model_copy(
    update={"allowed_tools": ("noop",)}
)
_answer = SUPPORT_STEP_PROFILES["draft_answer"].model_copy(
    update={"proposable_actions": (), "conditional_kinds": ()}
)
BENCH_PRINCIPAL = Principal(user_id="bench", tenant_id="bench", scopes=frozenset({"bench"}))


def build_pack(
    name: str, steps: int, compaction: CompactionPolicy | None = None, evidence_bytes: int = 0
) -> Pack:
    """A loop of ``steps`` no-op tool calls (each returning a passage of ``evidence_bytes``, if
    any), then an answer."""
    profile = AgentProfile(
        profile_id=f"{name}-loop",
        agent_version="bench-1",
        instructions=(Instruction(id="instr:loop", text="Call noop until told to stop."),),
        model=ModelProfile(name="loop", provider="loop", model="loop", settings={"steps": steps}),
        tool_grants=(ToolGrant.of(NOOP, ["choose_next_action"]),),
        step_profiles=(_choose, _answer),
        token_budget=SUPPORT_BUDGET,
        policy_bundle="none",
        budgets=Budget(steps=steps + 5, tool_calls=steps + 1, tokens=10**12),
        compaction=compaction or CompactionPolicy(),
    )

    def make_work_order(request: str, principal: Principal) -> WorkOrder:
        return WorkOrder(
            objective="loop",
            request_text=request,
            principal=principal,
            pack=name,
            agent_profile_id=profile.profile_id,
        )

    return Pack(
        name=name,
        profile=profile,
        tools={"noop": Noop(evidence_bytes=evidence_bytes)},
        principals=(BENCH_PRINCIPAL,),
        models={"loop": LoopModel()},
        install=lambda engine: None,
        seed=lambda engine: False,
        make_work_order=make_work_order,
        policy_version=lambda engine: "none",
    )


STEPS = 20
PACK = build_pack("bench", STEPS)
LONG_STEPS = 1_000
LONG_PACK = build_pack(
    "bench_long", LONG_STEPS, CompactionPolicy(max_history_events=800, max_history_bytes=2_000_000)
)
UNCOMPACTED_PACK = build_pack(
    "bench_flat", 200, CompactionPolicy(max_history_events=50_000, max_history_bytes=40_000_000)
)
# Every call returns a 25 kB passage, so the state outgrows what a run can carry before step 60.
BLOATING_PACK = build_pack(
    "bench_bloat",
    60,
    CompactionPolicy(max_history_events=2_000, max_history_bytes=2_000_000),
    evidence_bytes=25_000,
)
CONTINUING_PACK = build_pack(
    "bench_can", 30, CompactionPolicy(max_history_events=120, max_history_bytes=2_000_000)
)
# The same loop keeping a window of 5 entries of each history as it continues (``domain.window``).
WINDOWED_PACK = build_pack(
    "bench_window",
    30,
    CompactionPolicy(max_history_events=120, max_history_bytes=2_000_000, window=5),
)
