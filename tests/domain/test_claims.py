"""An answer may report an effect only by pointing at the succeeded receipt of the same tool
about the same resource; the runtime delivers that receipt's own words, and refuses the rest."""

from __future__ import annotations

from datetime import timedelta

from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.claims import CONFIRMED_HEADING, delivered_text
from agentledger.domain.context.packet import decision_schema
from agentledger.domain.decisions import Answer, Claim
from agentledger.domain.fold import project
from agentledger.domain.manifest import resolve_manifest
from agentledger.domain.run_loop import DRAFT_ANSWER, check_decision
from agentledger.domain.steps import ModelStepResult, Recording, after_model_step, complete
from agentledger.packs.support.profile import SUPPORT_PROFILE
from bench.factories import T0, RunScript

REFUND = {"order_id": "ord_4821", "amount": 42.5, "currency": "EUR"}
MANIFEST = resolve_manifest(
    SUPPORT_PROFILE,
    contracts=get_pack("support").contracts,
    attempt_id="att-1",
    work_order_digest=sha256_hex("work-order"),
    memory_snapshot="none",
    policy_version="returns-2026-08",
)


def refunded(resource_id: str | None = "ord_4821") -> RunScript:
    s = RunScript(manifest_hash=MANIFEST.hash)
    s.started()
    s.step()
    s.authorise("op_1", "create_refund", REFUND, write=True, resource_id=resource_id)
    s.receipt("op_1", "create_refund", write=True)
    s.step(DRAFT_ANSWER)
    return s


def answered(answer: Answer) -> list[ev.RunEvent]:
    rec = Recording(run_id="run-1", state=project(refunded().events), manifest_hash=MANIFEST.hash)
    after_model_step(
        rec, T0 + timedelta(hours=1), DRAFT_ANSWER, ModelStepResult(decision=answer), MANIFEST
    )
    return rec.outbox


def rejection(events: list[ev.RunEvent]) -> ev.DecisionRejected:
    rejected = [e for e in events if isinstance(e, ev.DecisionRejected)]
    assert len(rejected) == 1, events
    return rejected[0]


def test_a_manifest_frozen_now_binds_claims_to_their_resource() -> None:
    assert MANIFEST.bound_claims


def test_an_answer_claiming_a_receipt_about_another_resource_is_refused_and_recorded() -> None:
    claim = Claim(operation_id="op_1", tool="create_refund", resource_id="ord_9999")
    refused = rejection(answered(Answer(answer="Order ord_9999 is refunded.", claims=(claim,))))
    assert refused.reason_code == "unsupported_claim" and refused.option == "answer"
    assert "ord_9999" in refused.detail and "about ord_4821" in refused.detail


def test_an_ids_only_claim_is_refused_because_it_names_no_resource() -> None:
    said = Answer(answer="Order ord_9999 is refunded.", claimed_operation_ids=("op_1",))
    refused = rejection(answered(said))
    assert refused.reason_code == "unsupported_claim" and "op_1" in refused.detail


def test_a_claim_naming_another_tool_is_refused() -> None:
    claim = Claim(operation_id="op_1", tool="cancel_order", resource_id="ord_4821")
    problem = check_decision(
        DRAFT_ANSWER,
        Answer(answer="Cancelled.", claims=(claim,)),
        project(refunded().events),
        (),
        bound_claims=True,
    )
    assert problem is not None and problem.reason_code == "unsupported_claim"
    assert "receipt is of create_refund" in problem.detail


def test_a_claim_on_a_receipt_that_recorded_no_resource_is_refused() -> None:
    claim = Claim(operation_id="op_1", tool="create_refund", resource_id="ord_4821")
    state = project(refunded(resource_id=None).events)
    problem = check_decision(
        DRAFT_ANSWER, Answer(answer="Refunded.", claims=(claim,)), state, (), bound_claims=True
    )
    assert problem is not None and problem.reason_code == "unsupported_claim"


def test_a_claim_matching_its_receipt_is_accepted_and_delivered_in_the_receipts_words() -> None:
    claim = Claim(operation_id="op_1", tool="create_refund", resource_id="ord_4821")
    events = answered(Answer(answer="Your refund is on its way.", claims=(claim,)))
    assert not [e for e in events if isinstance(e, ev.DecisionRejected)]
    state = project(refunded().events)
    text = delivered_text(Answer(answer="Your refund is on its way.", claims=(claim,)), state)
    assert text.splitlines() == [
        "Your refund is on its way.",
        "",
        CONFIRMED_HEADING,
        "- create_refund: succeeded (receipt rcpt-op_1)",
    ]


def test_the_run_completes_with_the_runtime_rendered_confirmation() -> None:
    claim = Claim(operation_id="op_1", tool="create_refund", resource_id="ord_4821")
    rec = Recording(run_id="run-1", state=project(refunded().events), manifest_hash=MANIFEST.hash)
    complete(rec, T0 + timedelta(hours=1), Answer(answer="Done.", claims=(claim,)))
    done = rec.outbox[-1]
    assert isinstance(done, ev.RunCompleted)
    assert done.answer.endswith("- create_refund: succeeded (receipt rcpt-op_1)")


def test_an_answer_without_claims_is_delivered_as_written() -> None:
    said = Answer(answer="Your card is extended.")
    assert delivered_text(said, project(refunded().events)) == "Your card is extended."


def test_the_schema_of_a_manifest_that_binds_claims_offers_claims_only() -> None:
    bound = decision_schema("answer", None, (), bound_claims=True).json_schema
    legacy = decision_schema("answer", None).json_schema
    assert "claims" in bound["properties"] and "claimed_operation_ids" not in bound["properties"]
    assert "claims" not in legacy["properties"] and "claimed_operation_ids" in legacy["properties"]
