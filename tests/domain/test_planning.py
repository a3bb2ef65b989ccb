"""Plan-then-execute: grants from the request alone, checked, and held by the gate."""

from __future__ import annotations

import pytest

from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.governance import Allow, Deny
from agentledger.domain.planning import PlanningInput, PlanRefused, plan_grants
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import ArgumentBound, WorkGrant, WorkOrder
from agentledger.packs.support import make_work_order, planned_work_order
from agentledger.packs.support.profile import SUPPORT_PROFILE
from tests.domain.test_governance import DANA, decide


def bounds(order: WorkOrder) -> dict[str, tuple[ArgumentBound, ...]]:
    assert order.grants is not None
    return {g.tool: g.bounds for g in order.grants}


def test_the_order_the_customer_names_bounds_reading_and_refunding() -> None:
    order = make_work_order("Can I get a refund for order ord_4821? It arrived late.", DANA)
    only_4821 = (ArgumentBound(argument="order_id", allowed=("ord_4821",)),)
    assert bounds(order) == {
        "create_refund": only_4821,
        "get_customer": (),
        "get_order": only_4821,
        "search_returns_policy": (),
        "send_customer_message": (),
    }


def test_every_order_named_is_planned_and_none_when_none_is() -> None:
    both = make_work_order("ord_4821 and ord_4822 both came late", DANA)
    assert bounds(both)["get_order"][0].allowed == ("ord_4821", "ord_4822")
    none = make_work_order("Where is my parcel?", DANA)
    assert bounds(none)["create_refund"][0].allowed == ()


def test_the_gate_holds_the_run_to_the_planned_order() -> None:
    order = make_work_order("Refund ord_4821 please, it was late.", DANA)
    state = WorkingState(run_id="run-1", status="running", work_order=order)

    def read(order_id: str) -> ToolCallProposal:
        return ToolCallProposal(tool="get_order", arguments={"order_id": order_id})

    assert isinstance(decide(read("ord_4821"), state, step="choose_next_action"), Allow)
    verdict = decide(read("ord_4822"), state, step="choose_next_action")
    assert isinstance(verdict, Deny) and verdict.reason_code == "argument_not_authorised"


class Overreaching:
    def plan(self, given: PlanningInput) -> tuple[WorkGrant, ...]:
        return (WorkGrant(tool="get_order"), WorkGrant(tool="delete_account"))


class Twice:
    def plan(self, given: PlanningInput) -> tuple[WorkGrant, ...]:
        return (WorkGrant(tool="get_order"), WorkGrant(tool="get_order"))


@pytest.mark.parametrize(
    ("planner", "says"), [(Overreaching(), "delete_account"), (Twice(), "twice")]
)
def test_a_plan_beyond_the_profile_is_refused(planner: object, says: str) -> None:
    with pytest.raises(PlanRefused, match=says):
        planned_work_order("Refund ord_4821", DANA, planner)  # type: ignore[arg-type]


def test_a_planner_sees_trusted_input_only() -> None:
    seen: list[PlanningInput] = []

    class Spy:
        def plan(self, given: PlanningInput) -> tuple[WorkGrant, ...]:
            seen.append(given)
            return ()

    order = planned_work_order("Refund ord_4821", DANA, Spy())
    assert order.grants == ()  # an empty plan authorises nothing; it is not "no plan"
    assert set(PlanningInput.model_fields) == {
        "request_text",
        "principal",
        "references",
        "profile",
    }
    assert seen == [
        PlanningInput(
            request_text="Refund ord_4821",
            principal=DANA,
            references={"order_id": "ord_4821"},
            profile=SUPPORT_PROFILE,
        )
    ]


def test_a_plan_for_another_profile_is_refused() -> None:
    order = make_work_order("Refund ord_4821", DANA).model_copy(
        update={"agent_profile_id": "billing"}
    )
    with pytest.raises(PlanRefused, match="billing"):
        plan_grants(order, SUPPORT_PROFILE, Twice())
