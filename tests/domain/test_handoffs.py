"""Handoff contracts in the pure core: authority never widens, schemas are typed refusals, the
verdict gates the parent's tool, and the fold keeps delegations and their outputs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import JsonValue

from agentledger.app.registry import get_pack
from agentledger.cli.packs import step_schema
from agentledger.domain import events as ev
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import Delegate
from agentledger.domain.errors import InconsistentEvent
from agentledger.domain.fold import project
from agentledger.domain.handoffs import (
    HandoffAuthorityError,
    HandoffOrigin,
    child_budget,
    child_work_order,
    output_problem,
)
from agentledger.domain.manifest import AgentProfile, ExecutionManifest, resolve_manifest
from agentledger.domain.steps import ModelStepResult, Recording, after_model_step
from agentledger.domain.workorder import Budget
from agentledger.packs.support.review import (
    FRAUD_CHECK,
    FRAUD_REVIEW_PROFILE,
    REVIEWED_PROFILE,
)
from bench.factories import T0, RunScript
from tests.domain.test_governance import DANA, decide, read_order, refund
from tests.workflows.test_refund_run import REQUEST

CONTRACTS = get_pack("support").contracts


def _resolve(profile: AgentProfile, origin: HandoffOrigin | None = None) -> ExecutionManifest:
    return resolve_manifest(
        profile,
        attempt_id="att-1",
        work_order_digest=sha256_hex("work-order"),
        memory_snapshot="none",
        policy_version="returns-2026-08",
        contracts=CONTRACTS,
        handoff_origin=origin,
    )


MANIFEST = _resolve(REVIEWED_PROFILE)


def _with(**changes: Any) -> AgentProfile:
    return REVIEWED_PROFILE.model_copy(
        update={"handoffs": (FRAUD_CHECK.model_copy(update=changes),)}
    )


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"authority": ("get_order", "wire_money")}, "wire_money"),
        ({"steps": ("no_such_step",)}, "unknown steps"),
        ({"steps": ()}, "names no step"),
        ({"output_schema": {"type": "no-such-type"}}, "invalid schema"),
        ({"gates": (FRAUD_CHECK.gates[0].model_copy(update={"tool": "wire_money"}),)}, "gates"),
    ],
)
def test_a_contract_that_widens_authority_or_cannot_run_is_refused_at_resolution(
    changes: dict[str, Any], says: str
) -> None:
    with pytest.raises(HandoffAuthorityError, match=says):
        _resolve(_with(**changes))


def test_two_contracts_of_one_name_are_refused() -> None:
    twice = REVIEWED_PROFILE.model_copy(update={"handoffs": (FRAUD_CHECK, FRAUD_CHECK)})
    with pytest.raises(HandoffAuthorityError, match="two handoff contracts"):
        _resolve(twice)


def test_a_childs_grants_are_narrowed_to_the_contracts_authority() -> None:
    greedy = FRAUD_REVIEW_PROFILE.model_copy(
        update={
            "tool_grants": tuple(
                g.model_copy(update={"steps": ("gather",)}) for g in REVIEWED_PROFILE.tool_grants
            )
        }
    )
    origin = HandoffOrigin(parent_run_id="run-1", handoff="fraud_check", authority=("get_order",))
    child = _resolve(greedy, origin)
    assert {g.name for g in child.tool_grants} == {"get_order"}
    assert child.handoff_origin == origin
    assert child.hash != _resolve(greedy).hash


def test_the_child_gate_denies_a_tool_outside_its_authority_as_a_typed_denial() -> None:
    origin = HandoffOrigin(parent_run_id="run-1", handoff="fraud_check", authority=("get_order",))
    child = _resolve(FRAUD_REVIEW_PROFILE, origin)
    verdict = decide(refund(), project(_parent().events), step="gather", manifest=child)
    assert verdict.kind == "deny"
    assert verdict.reason_code == "outside_handoff_authority"  # type: ignore[union-attr]
    assert not verdict.protocol_error  # type: ignore[union-attr]


def test_a_manifest_without_handoffs_keeps_its_hash() -> None:
    plain = _resolve(REVIEWED_PROFILE.model_copy(update={"handoffs": ()}))
    assert "handoffs" not in plain.canonical() and "handoff_origin" not in plain.canonical()


def _parent(output: dict[str, JsonValue] | None = None, refused: bool = False) -> RunScript:
    """Dana's reviewed run has read her order; a fraud check may have completed."""
    s = RunScript(manifest_hash=MANIFEST.hash)
    s.started(who=DANA)
    read_order(s, "op_1")
    if output is not None or refused:
        s.add(
            ev.HandoffRequested,
            handoff="fraud_check",
            child_run_id="run-1/handoff/1",
            step="choose_next_action",
            profile_id=FRAUD_CHECK.profile_id,
            owner="risk-team",
            input={"order_id": "ord_4821"},
            budget=Budget(steps=4),
        )
    if output is not None:
        s.add(
            ev.HandoffCompleted,
            handoff="fraud_check",
            child_run_id="run-1/handoff/1",
            output=output,
        )
    if refused:
        s.add(
            ev.HandoffRefused,
            handoff="fraud_check",
            child_run_id="run-1/handoff/1",
            reason_code="child_budget_exhausted",
            detail="the child run ended: budget_exhausted",
        )
    s.step()
    s.proceed()
    s.step("draft_answer")
    return s


@pytest.mark.parametrize(
    ("script", "reason_code"),
    [
        (_parent(), "handoff_verdict_required"),
        (_parent(refused=True), "handoff_verdict_required"),
        (_parent({"verdict": "suspected", "reasons": ["x"]}), "handoff_verdict_blocks"),
    ],
    ids=["no-review", "review-refused", "suspected"],
)
def test_the_refund_is_refused_until_the_review_clears(script: RunScript, reason_code: str) -> None:
    verdict = decide(refund(), project(script.events), manifest=MANIFEST)
    assert verdict.kind == "deny"
    assert verdict.reason_code == reason_code  # type: ignore[union-attr]


def test_a_clear_review_lets_the_refund_go_to_approval() -> None:
    state = project(_parent({"verdict": "clear", "reasons": []}).events)
    assert decide(refund(), state, manifest=MANIFEST).kind == "needs_approval"


def test_the_fold_keeps_the_delegation_and_shows_its_output_as_an_observation() -> None:
    state = project(_parent({"verdict": "clear", "reasons": []}).events)
    (record,) = state.handoffs.values()
    assert (record.status, record.output) == ("completed", {"verdict": "clear", "reasons": []})
    seen = state.observations["run-1/handoff/1"]
    assert seen.tool == "handoff:fraud_check" and seen.model_view["output"] == record.output
    assert not state.handoff_running()
    refused = project(_parent(refused=True).events)
    assert refused.handoffs["run-1/handoff/1"].reason_code == "child_budget_exhausted"
    assert refused.rejected_options[-1].option == "handoff:fraud_check"


def test_an_end_for_a_handoff_never_requested_is_inconsistent() -> None:
    s = RunScript(manifest_hash=MANIFEST.hash)
    s.started(who=DANA)
    s.add(ev.HandoffCompleted, handoff="fraud_check", child_run_id="run-1/handoff/9", output={})
    with pytest.raises(InconsistentEvent):
        project(s.events)


def test_a_child_requested_twice_is_inconsistent() -> None:
    s = _parent({"verdict": "clear", "reasons": []})
    again = next(e for e in s.events if isinstance(e, ev.HandoffRequested))
    s.add(ev.HandoffRequested, **again.model_dump(exclude={*ev.ENVELOPE_FIELDS, "kind"}))
    with pytest.raises(InconsistentEvent, match="requested twice"):
        project(s.events)


def test_the_child_work_order_keeps_the_parents_bounds_and_its_requester() -> None:
    parent = get_pack("support_reviewed").make_work_order(REQUEST, DANA)
    assert parent.grants is not None
    given: dict[str, JsonValue] = {"order_id": "ord_4821", "requester_id": "usr_88"}
    child = child_work_order(parent, FRAUD_CHECK, given, Budget(steps=3))
    assert child.grants is not None
    assert {g.tool for g in child.grants} <= set(FRAUD_CHECK.authority)
    bounds = {g.tool: g.bounds for g in child.grants}
    assert bounds["get_order"] == next(g.bounds for g in parent.grants if g.tool == "get_order")
    assert child.references["requester_id"] == "usr_73"  # the parent's principal, not the input
    assert (child.principal, child.agent_profile_id) == (parent.principal, FRAUD_CHECK.profile_id)


def test_the_child_budget_is_never_more_than_the_parent_has_left() -> None:
    left = Budget(steps=2, tool_calls=1, tokens=500, wall_seconds=10**6)
    assert child_budget(FRAUD_CHECK, left) == Budget(
        steps=2, tool_calls=1, tokens=500, wall_seconds=600
    )


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (None, "no answer"),
        ("not json", "not JSON"),
        ("[1]", "not a JSON object"),
        ('{"verdict": "maybe", "reasons": []}', "maybe"),
        ('{"verdict": "clear"}', "reasons"),
    ],
)
def test_child_output_that_fails_the_schema_says_why(answer: str | None, says: str) -> None:
    output, problem = output_problem(FRAUD_CHECK, answer)
    assert output is None and problem is not None and says in problem


def _delegating(decision: Delegate, step: str = "choose_next_action") -> list[ev.RunEvent]:
    rec = Recording(run_id="run-1", state=project(_parent().events[:7]))
    rec.manifest_hash = MANIFEST.hash
    result = ModelStepResult(decision=decision)
    after_model_step(rec, T0 + timedelta(hours=1), step, result, MANIFEST)
    return rec.outbox


@pytest.mark.parametrize(
    ("decision", "step", "reason_code"),
    [
        (
            Delegate(handoff="fraud_check", input={"order_id": 4821}),
            "choose_next_action",
            "input_schema_violation",
        ),
        (
            Delegate(handoff="fraud_check", input={"order_id": "ord_4821"}),
            "draft_answer",
            "handoff_not_allowed",
        ),
        (Delegate(handoff="wire_check", input={}), "choose_next_action", "handoff_not_allowed"),
    ],
)
def test_a_delegation_the_contract_does_not_allow_is_refused_before_any_child(
    decision: Delegate, step: str, reason_code: str
) -> None:
    (refused,) = _delegating(decision, step)
    assert isinstance(refused, ev.HandoffRefused)
    assert (refused.reason_code, refused.child_run_id) == (reason_code, None)


def test_an_allowed_delegation_is_recorded_as_the_steps_decision() -> None:
    (recorded,) = _delegating(Delegate(handoff="fraud_check", input={"order_id": "ord_4821"}))
    assert isinstance(recorded, ev.DecisionRecorded) and recorded.decision.type == "delegate"


def test_only_a_step_a_contract_names_is_offered_delegate_with_its_contracts() -> None:
    offered = step_schema(REVIEWED_PROFILE, "choose_next_action").json_schema["$defs"]
    assert isinstance(offered, dict) and "Delegate" in offered
    assert offered["Delegate"]["properties"]["handoff"]["enum"] == ["fraud_check"]  # type: ignore[index,call-overload]
    for profile, step in ((REVIEWED_PROFILE, "draft_answer"), (FRAUD_REVIEW_PROFILE, "gather")):
        assert "Delegate" not in str(step_schema(profile, step).json_schema)
