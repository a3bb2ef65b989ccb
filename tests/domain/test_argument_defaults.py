"""A work order's argument bounds and the gate see one normalisation of a call's arguments:
the tool's schema with its defaults filled, whether the model spelled a default out or left it."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, JsonValue

from agentledger.domain.arguments import normalised_arguments
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.governance import Allow, Authorization, Deny, authorize
from agentledger.domain.manifest import resolve_manifest
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import ArgumentBound, WorkGrant, WorkOrder
from agentledger.sdk import AgentPack, ModelProfile, ToolContext, step

NOW = datetime(2026, 12, 1, tzinfo=UTC)
WHO = Principal(user_id="usr_1", tenant_id="t1", scopes=frozenset({"x:read"}))


class Echo(BaseModel):
    text: str


def _pack() -> AgentPack:
    pack = AgentPack(
        "defaults",
        version="1.0.0",
        objective="echo",
        instructions=["be brief"],
        model=ModelProfile(name="m", provider="m", model="m-1"),
        steps=[step("look", tools=["echo"], next=["reply"]), step("reply")],
    )

    @pack.read_tool(description="Echo text.", required_scope="x:read")
    def echo(ctx: ToolContext, text: str, times: int = 1, loud: bool = False) -> Echo:
        return Echo(text=text * times)

    return pack


PACK = _pack().build()
MANIFEST = resolve_manifest(
    PACK.profile,
    contracts=PACK.contracts,
    attempt_id="att-1",
    work_order_digest=sha256_hex("work-order"),
    memory_snapshot="memory:empty",
    policy_version="p-1",
)
SCHEMA = MANIFEST.terms["echo"].input_schema


def bounded_by(call: dict[str, JsonValue]) -> WorkingState:
    """A work order whose bounds are the values of ``call``, normalised as a planner does."""
    normal = normalised_arguments(SCHEMA, call)
    grant = WorkGrant(
        tool="echo",
        bounds=tuple(ArgumentBound(argument=k, allowed=(v,)) for k, v in sorted(normal.items())),
    )
    order = WorkOrder(
        objective="o",
        request_text="r",
        principal=WHO,
        pack="defaults",
        agent_profile_id=PACK.profile.profile_id,
        grants=(grant,),
    )
    return WorkingState(run_id="run-1", status="running", work_order=order)


def decide(
    arguments: dict[str, JsonValue], state: WorkingState, *, patched: bool = True
) -> Authorization:
    """The gate as a run's workflow calls it: against the manifest's frozen terms."""
    return authorize(
        ToolCallProposal(tool="echo", arguments=arguments),
        state,
        MANIFEST,
        WHO,
        NOW,
        contracts=MANIFEST.terms,
        step="look",
        operation_id="op-1",
        bounds_with_defaults=patched,
    )


def test_normalising_fills_the_defaults_the_schema_declares() -> None:
    assert normalised_arguments(SCHEMA, {"text": "hi"}) == {"text": "hi", "times": 1, "loud": False}
    assert normalised_arguments(SCHEMA, {"text": "hi", "loud": True}) == {
        "text": "hi",
        "times": 1,
        "loud": True,
    }


def test_a_call_that_leaves_out_a_defaulted_argument_is_within_bounds_computed_with_it() -> None:
    state = bounded_by({"text": "hi"})
    assert isinstance(decide({"text": "hi"}, state), Allow)
    assert isinstance(decide({"text": "hi", "times": 1, "loud": False}, state), Allow)


def test_a_call_that_spells_out_a_default_is_within_bounds_computed_without_it() -> None:
    state = bounded_by({"text": "hi", "times": 1})
    assert isinstance(decide({"text": "hi"}, state), Allow)


def test_a_call_that_overrides_a_default_the_bounds_fixed_is_still_denied() -> None:
    verdict = decide({"text": "hi", "loud": True}, bounded_by({"text": "hi"}))
    assert isinstance(verdict, Deny) and verdict.reason_code == "argument_not_authorised"


def test_the_allowed_call_keeps_the_arguments_the_model_sent() -> None:
    """Filling defaults is for comparing bounds; what runs and what is digested is the call as
    proposed (recorded runs digested it that way)."""
    verdict = decide({"text": "hi"}, bounded_by({"text": "hi"}))
    assert isinstance(verdict, Allow) and verdict.arguments == {"text": "hi"}


def test_a_run_recorded_before_the_patch_is_judged_as_it_was() -> None:
    """Its history recorded the refusal; a replay refuses again (``bounds-with-defaults``)."""
    verdict = decide({"text": "hi"}, bounded_by({"text": "hi"}), patched=False)
    assert isinstance(verdict, Deny) and verdict.reason_code == "argument_not_authorised"
