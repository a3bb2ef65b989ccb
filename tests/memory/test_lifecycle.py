"""The pure lifecycle: every step an event, every refusal a value, no I/O."""

from __future__ import annotations

from agentledger.domain.events import MemoryProposed
from agentledger.domain.memory import (
    Refused,
    admit,
    outcome_proposal,
    proposal_from_event,
    revoke,
)
from agentledger.domain.state import CompletedAction
from bench.context_fixtures import CUSTOMER, NOW, state_after
from tests.memory.conftest import OTHER_CUSTOMER, proposal


def test_a_principals_own_preference_walks_the_whole_lifecycle_by_policy() -> None:
    admitted = admit(proposal("m1", {"language": "en"}), CUSTOMER, [], NOW)

    kinds = [e.kind for t in admitted.transitions for e in t.events]
    assert kinds == [
        "observed",
        "quarantined",
        "classified",
        "evaluated",
        "approved",
        "published",
    ]
    assert admitted.record is not None and admitted.record.approved_by == "policy"
    assert admitted.record.claim_key == "preference.language"
    assert admitted.record.expires_at is not None  # retention always applies


def test_a_prior_outcome_needs_its_receipt() -> None:
    outcome = {"tool": "create_refund", "receipt_id": "rf_1"}
    bare = proposal("m2", outcome, category="prior_outcome", writer="run", trust="verified_fact")
    with_receipt = bare.model_copy(update={"evidence": ("receipt:rf_1",)})

    refused = admit(bare, CUSTOMER, [], NOW)
    assert refused.refused is not None and refused.refused.code == "missing_evidence"
    assert admit(with_receipt, CUSTOMER, [], NOW).published


def test_a_model_summary_cannot_claim_to_be_a_verified_fact() -> None:
    claim = proposal("m3", {"summary": "VIP"}, category="run_summary", writer="model")
    forged = claim.model_copy(update={"trust": "verified_fact", "evidence": ("run:r1",)})

    refused = admit(forged, CUSTOMER, [], NOW).refused
    assert refused is not None and refused.code == "write_not_allowed"


def test_revocation_is_an_event_and_only_the_owner_or_a_curator_may_revoke() -> None:
    record = admit(proposal("m4", {"language": "en"}), CUSTOMER, [], NOW).record
    assert record is not None

    assert isinstance(revoke(record, OTHER_CUSTOMER, "not yours", NOW), Refused)
    revoked = revoke(record, CUSTOMER, "changed my mind", NOW)
    assert not isinstance(revoked, Refused) and revoked.events[0].kind == "revoked"


def test_a_finishing_refund_run_proposes_its_outcome_with_the_receipt() -> None:
    refund = CompletedAction(
        operation_id="op_28",
        tool="create_refund",
        status="succeeded",
        receipt_id="rf_ord_4821",
        idempotency_key="run-1:op_28",
        arguments_digest="sha256:c",
        summary="Refund of 42.50 EUR",
    )
    state = state_after().model_copy(update={"completed_actions": (refund,), "last_seq": 40})

    fields = outcome_proposal(state)
    assert fields is not None and fields.category == "prior_outcome"
    assert outcome_proposal(state_after()) is None  # nothing written, nothing to remember
    event = MemoryProposed(
        run_id=state.run_id or "run-1",
        seq=41,
        recorded_at=NOW,
        manifest_hash="sha256:m",
        **fields.model_dump(),
    )
    proposed = proposal_from_event(event, CUSTOMER)
    assert not isinstance(proposed, Refused)
    admitted = admit(proposed, CUSTOMER, [], NOW)
    assert admitted.published and admitted.record is not None
    assert admitted.record.content["receipt_id"] == "rf_ord_4821"
    assert admitted.record.evidence[0] == "receipt:rf_ord_4821"
