"""A worker SIGKILLed while its model streams the answer: the customer following the run is
told to start over, never shown half of one attempt glued to another, and the answer the run
records is exactly the winning attempt's chunks put together.

The worker is a subprocess with a model provider configured to stream from the local chat
server; the first attempt's answer comes slowly, and the test kills the worker once part of it
is in the answer stream. The step's heartbeat time-out names the attempt dead, and the restarted
worker's second attempt answers in other words.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.app import runs as client_ops
from agentledger.app.answer_stream import AnswerFollower, Said
from agentledger.app.config import PROVIDERS_VARIABLE
from agentledger.app.registry import get_pack
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import ModelOverride
from bench.crash.crashkit import CrashSite, WorkerProcess
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import decision

pytestmark = pytest.mark.temporal

FIRST = "I am sorry your order arrived late. Let me explain what happens next with refunds: "
FIRST += "a refund for a late delivery is paid to the card you used, within five working days."
SECOND = "Your order was late; a refund goes to your card within five working days."


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


async def test_a_worker_killed_mid_answer_restarts_the_stream_and_records_the_winner(
    client: Client,
    crash_site: CrashSite,
    crash_ledger: Ledger,
    customer: Principal,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat_server.script(
        decision({"type": "proceed_to_answer"}),
        Reply(body=decision({"type": "answer", "answer": FIRST}).body, chunk_delay=0.3),
        Reply(body=decision({"type": "answer", "answer": SECOND}).body, chunk_delay=0.02),
    )
    house = {"base_url": chat_server.url, "models": ["m"], "stream": True}
    monkeypatch.setenv(PROVIDERS_VARIABLE, json.dumps({"house": house}))
    order = get_pack("support").make_work_order("My order ord_4821 arrived late.", customer)
    order = order.model_copy(update={"model_override": ModelOverride(provider="house")})
    async with WorkerProcess(crash_site) as worker:
        handle = await client_ops.start_run(
            client, crash_site.task_queue, order, issuer=crash_site.issuer
        )
        heard, follower = list[Said](), AnswerFollower(crash_ledger, handle.id)
        following = asyncio.create_task(follower.follow(heard.append))
        await _until_streamed(crash_ledger, handle.id, chars=20)
        worker.kill()
        await asyncio.wait_for(handle.result(), 120)
        following.cancel()
        heard += follower.poll()
    run, newest = crash_ledger.get_run(handle.id), crash_ledger.read_stream(handle.id)

    assert worker.kills == 1
    assert run is not None and run.status == "completed" and run.answer == SECOND
    assert newest.stream is not None and newest.stream.status == "done"
    assert (newest.stream.attempt, newest.text) == (2, SECOND)
    taken = [(s.attempt, s.status) for s in crash_ledger.streams(handle.id)]
    assert taken == [(1, "superseded"), (2, "done")]
    stale = crash_ledger.read_stream(handle.id, newest.stream.number - 1, 20)
    assert (stale.offset, stale.text) == (0, SECOND)  # a reader of the first take starts over
    assert len(chat_server.requests) == 3 and chat_server.remaining() == 0
    resets = [i for i, s in enumerate(heard) if s.kind == "reset"]
    assert len(resets) == 1 and heard[resets[0]].reason == "retried", heard
    before = "".join(s.text for s in heard[: resets[0]])
    after = "".join(s.text for s in heard[resets[0] + 1 :])
    assert 20 <= len(before) < len(FIRST) and FIRST.startswith(before)
    assert after == SECOND


async def _until_streamed(ledger: Ledger, run_id: str, chars: int) -> None:
    for _ in range(1200):
        if len(ledger.read_stream(run_id).text) >= chars:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {chars} characters of {run_id}'s answer were streamed in 60 s")
