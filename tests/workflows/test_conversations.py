"""Conversations end to end on the real server: the run asks, parks, takes the requester's reply,
answers, stays open for follow-ups, refuses (and records) replies it must not take, keeps every
message across continue-as-new, and closes politely when nobody writes."""

from __future__ import annotations

import asyncio

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from agentledger.domain.limits import MAX_REPLY_CHARS
from agentledger.domain.steps import MISSING_CONTEXT_QUESTION
from agentledger.workflows import ReplyResult, RunOutcome
from bench._chat_pack import CUSTOMER, IDLE_SECONDS, QUESTION, STRANGER
from tests._temporal import Harness

pytestmark = pytest.mark.temporal


async def _start(harness: Harness, request: str, pack: str = "chat") -> str:
    work_order = get_pack(pack).make_work_order(request, CUSTOMER)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    return handle.id


async def _parked(harness: Harness, run_id: str) -> str:
    """Wait until the run waits on its customer; the message it left for them."""
    state = await client_ops.wait_for(harness.client, run_id, pending_approval=False)
    assert state.awaiting is not None, state.status
    return state.conversation[-1].text


async def _persisted(harness: Harness, run_id: str, seq: int) -> list[ev.RunEvent]:
    """The ledger once it holds event ``seq``: a parked run's last events are appended by the
    activity it starts as it parks, which may still be running when a query sees the park."""
    for _ in range(100):
        events = harness.runtime.ledger.read(run_id)
        if events and events[-1].seq >= seq:
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"the ledger of {run_id} never reached #{seq}")


def _kinds(events: list[ev.RunEvent]) -> list[str]:
    return [e.kind for e in events]


def _contiguous(events: list[ev.RunEvent]) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_ask_reply_answer_follow_up_then_idle_close(harness: Harness) -> None:
    run_id = await _start(harness, "I'd like to pick a colour")
    assert await _parked(harness, run_id) == QUESTION
    await client_ops.reply(
        harness.client, run_id, CUSTOMER.user_id, "red, please", issuer=harness.issuer
    )
    assert await _parked(harness, run_id) == "You chose red."
    await client_ops.reply(
        harness.client, run_id, CUSTOMER.user_id, "actually make it blue", issuer=harness.issuer
    )
    assert await _parked(harness, run_id) == "You chose blue."

    handle = harness.client.get_workflow_handle(run_id, result_type=RunOutcome)
    outcome = await handle.result()  # the idle timer fires
    assert outcome.status == "completed" and outcome.answer == "You chose blue."
    events = harness.runtime.ledger.read(run_id)
    _contiguous(events)
    awaited = [e for e in events if isinstance(e, ev.ReplyAwaited)]
    assert [(a.reason, a.message) for a in awaited] == [
        ("question", QUESTION),
        ("follow_up", "You chose red."),
        ("follow_up", "You chose blue."),
    ]
    replies = [e for e in events if isinstance(e, ev.UserReplied)]
    assert [(r.text, r.principal_id) for r in replies] == [
        ("red, please", CUSTOMER.user_id),
        ("actually make it blue", CUSTOMER.user_id),
    ]
    closed = [e for e in events if isinstance(e, ev.ConversationClosed)]
    assert [c.reason for c in closed] == ["idle_timeout"]
    assert _kinds(events)[-2:] == ["conversation_closed", "run_completed"]
    # the close came from the durable timer, not earlier
    assert (closed[0].recorded_at - awaited[-1].recorded_at).total_seconds() >= IDLE_SECONDS - 1
    # the follow-up started again at the entry step
    steps = [e.step for e in events if isinstance(e, ev.StepStarted)]
    assert steps == ["understand", "understand", "respond", "understand", "respond"]
    state = project(events)
    assert [t.role for t in state.conversation] == ["agent", "user", "agent", "user", "agent"]


async def test_replies_it_must_not_take_are_refused_and_recorded(harness: Harness) -> None:
    run_id = await _start(harness, "I'd like to pick a colour")
    await _parked(harness, run_id)
    refusals = {
        "not_the_requester": (STRANGER.user_id, "blue"),
        "empty_reply": (CUSTOMER.user_id, "   "),
        "reply_too_long": (CUSTOMER.user_id, "x" * (MAX_REPLY_CHARS + 1)),
    }
    for code, (who, text) in refusals.items():
        with pytest.raises(Refused, match="refused"):
            await client_ops.reply(harness.client, run_id, who, text, issuer=harness.issuer)
        state = await client_ops.live_state(harness.client, run_id)
        assert state.awaiting is not None, code  # still waiting: nothing was taken
    megabyte = "y" * 1_000_000
    with pytest.raises(Refused):
        await client_ops.reply(
            harness.client, run_id, CUSTOMER.user_id, megabyte, issuer=harness.issuer
        )

    await client_ops.reply(harness.client, run_id, CUSTOMER.user_id, "green", issuer=harness.issuer)
    assert await _parked(harness, run_id) == "You chose green."
    await harness.client.get_workflow_handle(run_id).result()
    events = harness.runtime.ledger.read(run_id)
    _contiguous(events)
    refused = [e for e in events if isinstance(e, ev.ReplyRefused)]
    assert [r.reason_code for r in refused] == [*refusals, "reply_too_long"]
    assert refused[0].attempted_by == STRANGER.user_id
    assert all(len(r.detail) < 300 for r in refused)  # the refused text is not stored
    assert [e.text for e in events if isinstance(e, ev.UserReplied)] == ["green"]


async def test_a_step_missing_required_context_asks_for_it(harness: Harness) -> None:
    run_id = await _start(harness, "blue", pack="chat_strict")  # no conversation turn yet
    asked = await _parked(harness, run_id)
    assert asked.startswith(MISSING_CONTEXT_QUESTION) and "conversation_turn" in asked
    await client_ops.reply(
        harness.client, run_id, CUSTOMER.user_id, "blue, as I said", issuer=harness.issuer
    )
    assert await _parked(harness, run_id) == "You chose blue."
    await harness.client.get_workflow_handle(run_id).terminate("checked")
    events = harness.runtime.ledger.read(run_id)
    rejected = [e for e in events if isinstance(e, ev.DecisionRejected)]
    assert [r.reason_code for r in rejected] == ["insufficient_context"]
    assert not any(isinstance(e, ev.RunFailed) for e in events)


async def test_a_run_that_is_no_conversation_takes_no_reply(harness: Harness) -> None:
    support = await harness.start("Where is my order ord_4821?")
    await client_ops.wait_for(harness.client, support, pending_approval=True)
    with pytest.raises(Refused, match="does not take replies"):
        await client_ops.reply(harness.client, support, "usr_73", "hello?", issuer=harness.issuer)
    refused = [e for e in harness.runtime.ledger.read(support) if isinstance(e, ev.ReplyRefused)]
    assert [r.reason_code for r in refused] == ["not_a_conversation"]


async def test_no_message_is_lost_across_continue_as_new(harness: Harness) -> None:
    run_id = await _start(harness, "I'd like to pick a colour", pack="chat_can")
    await _parked(harness, run_id)
    colours = ["red", "green", "blue"]
    sent: list[str] = []
    for turn in range(12):
        text = f"turn {turn}: {colours[turn % 3]}"
        # several messages at once: each is taken (recorded once) or refused to its sender;
        # one arriving while the run continues as new waits for the next execution
        results = await asyncio.gather(
            *(
                client_ops.reply(
                    harness.client, run_id, CUSTOMER.user_id, f"{text} #{n}", issuer=harness.issuer
                )
                for n in range(3)
            ),
            return_exceptions=True,
        )
        taken = sorted(
            (r.seq, f"{text} #{n}") for n, r in enumerate(results) if isinstance(r, ReplyResult)
        )
        assert taken, results
        assert all(isinstance(r, ReplyResult | Refused) for r in results), results
        sent += [message for _, message in taken]
        assert await _parked(harness, run_id) == f"You chose {colours[turn % 3]}."

    live = await client_ops.live_state(harness.client, run_id)
    events = await _persisted(harness, run_id, live.last_seq)
    _contiguous(events)
    assert any(isinstance(e, ev.HistoryCompacted) for e in events)  # it did continue as new
    assert [e.text for e in events if isinstance(e, ev.UserReplied)] == sent
    assert [t.text for t in live.conversation if t.role == "user"] == sent
    assert project(events) == live
