"""Which step runs next, and whether a decision fits the step that produced it."""

from __future__ import annotations

import pytest

from agentledger.domain.decisions import Answer, CallTool, ProceedToAnswer, ToolCallProposal
from agentledger.domain.fold import project
from agentledger.domain.run_loop import CHOOSE_NEXT_ACTION, DRAFT_ANSWER, check_decision, next_step
from agentledger.domain.state import WorkingState
from bench.factories import RunScript, refund_run

SOURCE = "returns-2026-08#late-delivery"
REFUND = ToolCallProposal(
    tool="create_refund", arguments={"order_id": "ord_4821", "amount": 42.5, "currency": "EUR"}
)
READ = CallTool(proposal=ToolCallProposal(tool="get_order", arguments={"order_id": "ord_4821"}))


def started() -> RunScript:
    s = RunScript()
    s.started()
    s.step()
    return s


def test_a_new_run_starts_by_choosing_its_next_action() -> None:
    assert next_step(project(started().events), None) == CHOOSE_NEXT_ACTION


def test_a_run_keeps_gathering_after_a_tool_call() -> None:
    s = started()
    s.call("get_order", {"order_id": "ord_4821"})
    s.authorise("op_1", "get_order", {"order_id": "ord_4821"})
    s.receipt("op_1", "get_order")
    assert next_step(project(s.events), None) == CHOOSE_NEXT_ACTION


def test_after_proceed_to_answer_the_run_drafts_the_answer() -> None:
    s = started()
    s.proceed()
    assert next_step(project(s.events), None) == DRAFT_ANSWER


def test_a_run_waiting_on_a_proposed_action_has_no_next_step() -> None:
    s = started()
    s.proceed()
    s.step(DRAFT_ANSWER)
    s.answer("You qualify for a refund review.", (SOURCE,), propose=REFUND)
    state = project(s.events)
    assert state.phase == "acting"
    assert next_step(state, None) is None


def test_a_run_whose_approval_is_rejected_drafts_again() -> None:
    s = refund_run(finish=False)
    s.reject("appr_1")
    assert next_step(project(s.events), None) == DRAFT_ANSWER


def test_a_completed_run_has_no_next_step() -> None:
    assert next_step(project(refund_run().events), None) is None


def test_a_failed_run_has_no_next_step() -> None:
    s = started()
    s.fail()
    assert next_step(project(s.events), None) is None


@pytest.mark.parametrize(
    ("step", "decision"),
    [
        (CHOOSE_NEXT_ACTION, Answer(answer="Done.")),
        (DRAFT_ANSWER, READ),
        (DRAFT_ANSWER, ProceedToAnswer()),
        ("classify", READ),
    ],
)
def test_a_decision_of_the_wrong_shape_for_its_step_is_rejected(
    step: str, decision: CallTool | ProceedToAnswer | Answer
) -> None:
    problem = check_decision(step, decision, WorkingState(), packet_ids=())
    assert problem is not None and problem.reason_code == "wrong_output_for_step"


@pytest.mark.parametrize("decision", [READ, ProceedToAnswer()])
def test_choosing_the_next_action_may_call_a_tool_or_proceed(
    decision: CallTool | ProceedToAnswer,
) -> None:
    assert check_decision(CHOOSE_NEXT_ACTION, decision, WorkingState(), packet_ids=()) is None


def test_an_answer_citing_a_source_outside_the_packet_is_rejected() -> None:
    answer = Answer(answer="Late orders qualify.", supporting_source_ids=(SOURCE, "faq#made-up"))
    problem = check_decision(DRAFT_ANSWER, answer, WorkingState(), packet_ids=(SOURCE,))
    assert problem is not None and problem.reason_code == "citation_not_in_context"
    assert "faq#made-up" in problem.detail and SOURCE not in problem.detail


def test_an_answer_claiming_an_operation_that_never_ran_is_rejected() -> None:
    state = project(refund_run(finish=False).events)
    answer = Answer(
        answer="Your refund was created.",
        supporting_source_ids=(SOURCE,),
        claimed_operation_ids=("op_106",),
    )
    problem = check_decision(DRAFT_ANSWER, answer, state, packet_ids=(SOURCE,))
    assert problem is not None and problem.reason_code == "claims_unexecuted_action"
    assert "op_106" in problem.detail


def test_an_answer_claiming_a_failed_operation_is_rejected() -> None:
    s = started()
    s.authorise("op_1", "create_refund", REFUND.arguments, write=True)
    s.receipt("op_1", "create_refund", status="failed", write=True)
    answer = Answer(answer="Your refund was created.", claimed_operation_ids=("op_1",))
    problem = check_decision(DRAFT_ANSWER, answer, project(s.events), packet_ids=())
    assert problem is not None and problem.reason_code == "claims_unexecuted_action"


def test_a_cited_answer_claiming_a_succeeded_operation_passes() -> None:
    state = project(refund_run().events)
    answer = Answer(
        answer="Your refund of 42.50 EUR was created.",
        supporting_source_ids=(SOURCE,),
        claimed_operation_ids=("op_106",),
    )
    assert check_decision(DRAFT_ANSWER, answer, state, packet_ids=(SOURCE, "req")) is None
