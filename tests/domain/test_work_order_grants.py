"""A work order can narrow what the manifest grants: only its tools, only its argument values."""

from __future__ import annotations

from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.governance import Allow, Deny
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import ArgumentBound, WorkGrant, WorkOrder
from tests.domain.test_governance import DANA, decide


def state_with(grants: tuple[WorkGrant, ...] | None) -> WorkingState:
    order = WorkOrder(
        objective="o",
        request_text="r",
        principal=DANA,
        pack="support",
        agent_profile_id="support-refunds",
        grants=grants,
    )
    return WorkingState(run_id="run-1", status="running", work_order=order)


def read(order_id: str) -> ToolCallProposal:
    return ToolCallProposal(tool="get_order", arguments={"order_id": order_id})


def test_without_work_order_grants_the_manifest_alone_decides() -> None:
    assert isinstance(decide(read("ord_1"), state_with(None), step="choose_next_action"), Allow)


def test_a_tool_the_work_order_does_not_list_is_denied() -> None:
    state = state_with((WorkGrant(tool="search_returns_policy"),))
    verdict = decide(read("ord_1"), state, step="choose_next_action")
    assert isinstance(verdict, Deny) and verdict.reason_code == "not_in_work_order"
    assert not verdict.protocol_error  # a policy refusal, recorded as ToolCallDenied


def test_an_argument_outside_the_work_orders_bounds_is_denied() -> None:
    grants = (
        WorkGrant(
            tool="get_order", bounds=(ArgumentBound(argument="order_id", allowed=("ord_1",)),)
        ),
    )
    state = state_with(grants)
    assert isinstance(decide(read("ord_1"), state, step="choose_next_action"), Allow)
    verdict = decide(read("ord_2"), state, step="choose_next_action")
    assert isinstance(verdict, Deny) and verdict.reason_code == "argument_not_authorised"
