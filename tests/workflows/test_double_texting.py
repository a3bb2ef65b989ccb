"""A customer's message while the run works meets the profile's double-texting policy:
``reject`` refuses it (``not_waiting``), ``queue`` holds it and takes it as the reply to the
run's next answer, ``interrupt`` takes it at the next safe point and sets aside what the run had
decided and not yet done. The run is held working by the chat pack's ``RESPONDING`` gate."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from bench._chat_pack import CUSTOMER, QUESTION, RESPONDING
from tests._temporal import Harness
from tests.workflows.test_conversations import _parked, _persisted, _start

pytestmark = pytest.mark.temporal


@pytest.fixture
def held() -> Iterator[None]:
    RESPONDING.clear()
    try:
        yield
    finally:
        RESPONDING.set()


async def _send(harness: Harness, run_id: str, text: str) -> bool:
    result = await client_ops.reply(
        harness.client, run_id, CUSTOMER.user_id, text, issuer=harness.issuer
    )
    return result.queued


async def _working(harness: Harness, pack: str) -> str:
    """A run that asked, was told "red", and is now held deciding its answer."""
    run_id = await _start(harness, "I'd like to pick a colour", pack=pack)
    assert await _parked(harness, run_id) == QUESTION
    assert not await _send(harness, run_id, "red, please")
    for _ in range(200):
        state = await client_ops.live_state(harness.client, run_id)
        if state.current_step == "respond" and state.awaiting is None:
            return run_id
        await asyncio.sleep(0.05)
    raise AssertionError("the run never reached its respond step")


async def _turns(harness: Harness, run_id: str) -> list[tuple[str, str]]:
    """The conversation as the ledger holds it, once it holds all the run has recorded (a
    parked run's last events reach it with the activity it starts as it parks)."""
    state = await client_ops.live_state(harness.client, run_id)
    events = await _persisted(harness, run_id, state.last_seq)
    return [(t.role, t.text) for t in project(events).conversation]


async def test_reject_refuses_a_message_while_the_run_works(harness: Harness, held: None) -> None:
    run_id = await _working(harness, "chat")
    with pytest.raises(Refused, match="not waiting"):
        await _send(harness, run_id, "no, make it blue")
    RESPONDING.set()
    assert await _parked(harness, run_id) == "You chose red."
    assert (await _turns(harness, run_id))[-1] == ("agent", "You chose red.")


async def test_queue_takes_the_message_as_the_reply_to_the_next_answer(
    harness: Harness, held: None
) -> None:
    run_id = await _working(harness, "chat_queue")
    assert await _send(harness, run_id, "no, make it blue")  # held, in the ledger at once
    held_event = harness.runtime.ledger.read(run_id)[-1]
    assert isinstance(held_event, ev.UserReplied) and held_event.queued
    RESPONDING.set()
    assert await _parked(harness, run_id) == "You chose blue."
    assert (await _turns(harness, run_id)) == [
        ("agent", QUESTION),
        ("user", "red, please"),
        ("agent", "You chose red."),
        ("user", "no, make it blue"),
        ("agent", "You chose blue."),
    ]
    assert (await client_ops.live_state(harness.client, run_id)).queued_replies == ()


async def test_interrupt_sets_aside_the_undone_answer_and_reads_the_message(
    harness: Harness, held: None
) -> None:
    run_id = await _working(harness, "chat_interrupt")
    assert await _send(harness, run_id, "no, make it blue")
    RESPONDING.set()
    assert await _parked(harness, run_id) == "You chose blue."
    assert (await _turns(harness, run_id)) == [
        ("agent", QUESTION),
        ("user", "red, please"),
        ("user", "no, make it blue"),
        ("agent", "You chose blue."),
    ]  # "You chose red." was decided, never sent
    state = await client_ops.live_state(harness.client, run_id)
    events = await _persisted(harness, run_id, state.last_seq)
    (taken,) = [e for e in events if isinstance(e, ev.ReplyTaken)]
    decided = [e for e in events if isinstance(e, ev.DecisionRecorded) and e.seq < taken.seq]
    assert decided[-1].decision.type == "answer"  # the set-aside decision stays on record
    steps = [e.step for e in events if isinstance(e, ev.StepStarted)]
    assert steps == ["understand", "understand", "respond", "understand", "respond"]
