"""Per-tool approver roles: a contract may ask a stricter role above an amount (the support pack's
refunds over 250 EUR need a ``finance_approver``), frozen in the manifest and shown in the inbox."""

from __future__ import annotations

import pytest

from agentledger.app.errors import Refused
from agentledger.domain.approval_rule import ApprovalRule, RoleAbove
from agentledger.domain.events import ApprovalAttemptRefused, ApprovalRequested
from agentledger.packs.support import PACK as SUPPORT
from tests._temporal import Harness
from tests.workflows.test_refund_run import refund_rows

CREATE_REFUND = SUPPORT.tools["create_refund"].contract

pytestmark = pytest.mark.temporal

LARGE = "Can I get a refund for order ord_4900? It arrived late."


def test_the_highest_threshold_crossed_names_the_role() -> None:
    rule = ApprovalRule(
        kind="always",
        amount_argument="amount",
        roles_above=(
            RoleAbove(role="finance_approver", above=250),
            RoleAbove(role="cfo", above=5000),
        ),
    )
    assert [rule.approver_role({"amount": a}) for a in (42.5, 250, 250.01, 9000)] == [
        "approver",
        "approver",
        "finance_approver",
        "cfo",
    ]
    assert rule.approver_role({}) == "approver"


def test_a_rule_without_roles_serialises_as_before_so_old_manifests_keep_their_hashes() -> None:
    assert ApprovalRule(kind="always").model_dump(mode="json") == {
        "kind": "always",
        "amount_argument": None,
        "threshold": 0.0,
    }
    with pytest.raises(ValueError, match="needs the amount_argument"):
        ApprovalRule(kind="always", roles_above=(RoleAbove(role="x", above=1),))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_large_refund_waits_for_a_finance_approver(harness: Harness) -> None:
    run_id = await harness.start(LARGE)
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    manifest = harness.runtime.ledger.get_manifest(
        harness.runtime.ledger.read(run_id)[-1].manifest_hash
    )
    assert manifest is not None
    assert manifest.terms["create_refund"].approval == CREATE_REFUND.approval  # frozen
    (row,) = await harness.in_inbox(run_id)
    assert row.approver_role == "finance_approver"  # what the inbox shows

    with pytest.raises(Refused, match="lacks the finance_approver role"):
        await harness.decide(run_id, approval_id, "ops_lead_1")
    assert refund_rows(harness, "ord_4900") == 0
    await harness.decide(run_id, approval_id, "fin_lead_1")
    events = await harness.finish(run_id)

    (asked,) = [e for e in events if isinstance(e, ApprovalRequested)]
    assert asked.approver_role == "finance_approver"
    assert asked.eligible_approvers == ("fin_lead_1",)
    (refused,) = [e for e in events if isinstance(e, ApprovalAttemptRefused)]
    assert (refused.attempted_by, refused.reason_code) == ("ops_lead_1", "missing_role")
    assert refund_rows(harness, "ord_4900") == 1
