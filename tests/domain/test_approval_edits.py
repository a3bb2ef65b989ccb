"""An approver's edits, purely: an edit may ask for less, not more (another resource, a larger
number) unless the terms name a role that may widen and the approver holds it; the signed
digest binds the exact edits; terms without a widening role keep their manifest hash."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import JsonValue

from agentledger.app.registry import get_pack
from agentledger.domain.approval_edits import edit_digest, edited_call, widening
from agentledger.domain.approval_rule import ApprovalRule
from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.decisions import ApprovalEdit, ToolCallProposal
from agentledger.domain.principal import Principal
from agentledger.domain.state import ApprovalRequest

REFUND = get_pack("support").contracts["create_refund"]
PROPOSED: dict[str, JsonValue] = {
    "order_id": "ord_4821", "amount": 42.5, "currency": "EUR", "reason": "late delivery",
}  # fmt: skip
MANIFEST: Any = SimpleNamespace(hash="sha256:m", policy_version="p1")
LEAD = Principal(user_id="lead", tenant_id="t1", roles=frozenset({"approver"}))
PENDING = ApprovalRequest(
    approval_id="apr_9",
    operation_id="op_9",
    proposal=ToolCallProposal(tool="create_refund", arguments=PROPOSED),
    proposal_digest="sha256:p",
    requested_by="usr_73",
    approver_role="approver",
    expires_at=datetime(2026, 12, 6, tzinfo=UTC),
)


@pytest.mark.parametrize(
    ("edits", "widens"),
    [
        ({"amount": 20.0}, False),
        ({"reason": "partial refund agreed"}, False),
        ({"amount": 42.51}, True),
        ({"order_id": "ord_4822"}, True),
    ],
)
def test_an_edit_widens_when_it_asks_for_more_or_for_another_resource(
    edits: dict[str, JsonValue], widens: bool
) -> None:
    assert (widening(REFUND, PROPOSED, {**PROPOSED, **edits}) is not None) is widens


def test_a_smaller_amount_is_an_edit_with_its_difference_and_its_own_digest() -> None:
    edit = edited_call(PENDING, {"amount": 20.0}, REFUND, MANIFEST, LEAD)
    assert isinstance(edit, ApprovalEdit)
    assert [(c.argument, c.proposed, c.approved) for c in edit.changes] == [("amount", 42.5, 20.0)]
    unedited = edited_call(PENDING, {"amount": 42.5}, REFUND, MANIFEST, LEAD)
    assert isinstance(unedited, ApprovalRefusal) and unedited.reason_code == "empty_edit"


def test_widening_needs_the_terms_widen_role_held_by_the_approver() -> None:
    larger = {"amount": 45.0}
    refused = edited_call(PENDING, larger, REFUND, MANIFEST, LEAD)
    assert isinstance(refused, ApprovalRefusal) and refused.reason_code == "edit_widens"
    rule = REFUND.approval.model_copy(update={"widen_role": "refund_supervisor"})
    widenable: Any = SimpleNamespace(**{
        name: getattr(REFUND, name) for name in ("name", "resource_argument", "input_model")
    }, approval=rule)  # fmt: skip
    still = edited_call(PENDING, larger, widenable, MANIFEST, LEAD)
    assert isinstance(still, ApprovalRefusal) and "refund_supervisor" in still.detail
    supervisor = LEAD.model_copy(update={"roles": frozenset({"approver", "refund_supervisor"})})
    assert isinstance(edited_call(PENDING, larger, widenable, MANIFEST, supervisor), ApprovalEdit)


def test_the_signed_digest_binds_the_exact_edits() -> None:
    assert edit_digest("sha256:p", {"amount": 20.0}) != edit_digest("sha256:p", {"amount": 20.5})
    assert edit_digest("sha256:p", {"amount": 20.0}) != edit_digest("sha256:q", {"amount": 20.0})


def test_terms_without_a_widening_role_serialise_as_before() -> None:
    assert "widen_role" not in ApprovalRule(kind="always").model_dump()
    assert ApprovalRule(kind="always", widen_role="x").model_dump()["widen_role"] == "x"
