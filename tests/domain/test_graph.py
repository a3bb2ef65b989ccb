"""Step graphs: checked when a profile is built, followed by the generic loop, and the reply
rules of a conversation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentledger.domain.conversation import reply_refusal
from agentledger.domain.decisions import AskUser, Proceed, ProceedToAnswer
from agentledger.domain.graph import (
    ConversationPolicy,
    StepGraph,
    StepGraphError,
    StepNode,
    check_graph,
)
from agentledger.domain.manifest import resolve_manifest
from agentledger.domain.run_loop import DecisionProblem, next_step, settled_decision
from agentledger.domain.state import AwaitedReply, WorkingState
from bench._chat_pack import CHAT, CUSTOMER

SCHEMAS = {"classify": "next_action", "gather": "next_action", "resolve": "answer"}
CHAT_POLICY = ConversationPolicy()


def _graph(*nodes: StepNode, entry: str = "classify") -> StepGraph:
    return StepGraph(entry=entry, nodes=nodes)


def test_a_linear_graph_runs() -> None:
    graph = StepGraph.linear("classify", "gather", "resolve", ask_user=["classify"])
    check_graph(graph, SCHEMAS, conversation=CHAT_POLICY)  # type: ignore[arg-type]
    assert graph.node("classify").next == ("gather",)


@pytest.mark.parametrize(
    ("nodes", "problem"),
    [
        (
            (StepNode(name="classify", next=("resolve",)), StepNode(name="resolve")),
            "steps and step profiles differ",
        ),
        (
            (
                StepNode(name="classify", next=("resolve",)),
                StepNode(name="gather", next=("resolve",)),
                StepNode(name="resolve"),
            ),
            "unreachable",
        ),
        (
            (
                StepNode(name="classify", next=("gather",)),
                StepNode(name="gather", next=("gather",)),
                StepNode(name="resolve"),
            ),
            "no answering step can be reached|unreachable",
        ),
        (
            (
                StepNode(name="classify", next=("nowhere",)),
                StepNode(name="gather"),
                StepNode(name="resolve"),
            ),
            "unknown steps",
        ),
        (
            (
                StepNode(name="classify", next=("gather",), ask_user=True),
                StepNode(name="gather", next=("resolve",)),
                StepNode(name="resolve"),
            ),
            "no conversation policy",
        ),
        (
            (
                StepNode(name="classify", next=("gather",)),
                StepNode(name="gather"),
                StepNode(name="resolve"),
            ),
            "dead end",
        ),
    ],
)
def test_a_graph_that_cannot_run_is_refused(nodes: tuple[StepNode, ...], problem: str) -> None:
    schemas = dict(SCHEMAS) if len(nodes) == 3 else {"classify": "next_action", "x": "answer"}
    with pytest.raises(StepGraphError, match=problem):
        check_graph(_graph(*nodes), schemas, conversation=None)  # type: ignore[arg-type]


def test_the_loop_follows_the_graph() -> None:
    graph = StepGraph.linear("classify", "gather", "resolve")
    state = WorkingState(status="running")
    assert next_step(state, graph) == "classify"
    assert next_step(state.model_copy(update={"at_step": "gather"}), graph) == "gather"
    waiting = AwaitedReply(seq=3, reason="question", step="classify", deadline=datetime.now(UTC))
    assert next_step(state.model_copy(update={"awaiting": waiting}), graph) is None
    assert next_step(state, None) == "choose_next_action"  # a manifest from before graphs


def test_a_proceed_is_settled_against_the_graph() -> None:
    graph = StepGraph.linear("classify", "gather", "resolve", ask_user=["classify"])
    assert settled_decision("classify", ProceedToAnswer(), graph) == Proceed(to="gather")
    assert settled_decision("classify", Proceed(), graph) == Proceed(to="gather")
    refused = settled_decision("classify", Proceed(to="resolve"), graph)
    assert isinstance(refused, DecisionProblem) and refused.reason_code == "transition_not_allowed"
    asked = settled_decision("gather", AskUser(question="which one?"), graph)
    assert isinstance(asked, DecisionProblem) and asked.reason_code == "wrong_output_for_step"
    assert settled_decision("classify", AskUser(question="which?"), graph) == AskUser(
        question="which?"
    )


def test_a_reply_is_taken_only_from_the_requester_while_the_run_waits() -> None:
    manifest = resolve_manifest(
        CHAT.profile,
        contracts=CHAT.contracts,
        attempt_id="a",
        work_order_digest="d",
        memory_snapshot="m",
        policy_version="p",
    )
    order = CHAT.make_work_order("hello", CUSTOMER)
    running = WorkingState(status="running", work_order=order)
    waiting = running.model_copy(
        update={
            "awaiting": AwaitedReply(
                seq=4,
                reason="question",
                step="understand",
                deadline=datetime.now(UTC) + timedelta(days=1),
            )
        }
    )
    assert reply_refusal(waiting, manifest, CUSTOMER.user_id, "red") is None
    codes = {
        "not_waiting": reply_refusal(running, manifest, CUSTOMER.user_id, "red"),
        "not_the_requester": reply_refusal(waiting, manifest, "usr_other", "red"),
        "empty_reply": reply_refusal(waiting, manifest, CUSTOMER.user_id, " \n"),
        "reply_too_long": reply_refusal(waiting, manifest, CUSTOMER.user_id, "x" * 20_001),
        "run_ended": reply_refusal(
            waiting.model_copy(update={"status": "completed"}), manifest, CUSTOMER.user_id, "r"
        ),
        "not_a_conversation": reply_refusal(waiting, None, CUSTOMER.user_id, "red"),
    }
    assert {code: r.reason_code if r else None for code, r in codes.items()} == {
        code: code for code in codes
    }
