"""A run whose provider streams: its answer is followed while the model writes it, through the
real worker, and what was followed is exactly the answer the run recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentledger.activities.models import ProviderConfig
from agentledger.app import runs as client_ops
from agentledger.app.answer_stream import AnswerFollower, Said
from agentledger.app.devserver import DevServer
from agentledger.app.registry import get_pack
from agentledger.domain.workorder import ModelOverride
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import decision
from bench.providers.runs import REQUEST, configured_harness

pytestmark = pytest.mark.temporal

ANSWER = "Thank you for waiting. Please tell me the order number, and I will look at it now."


async def test_a_streamed_answer_is_followed_as_written_and_equals_the_recorded_one(
    temporal_server: DevServer, tmp_path: Path, chat_server: ChatServer
) -> None:
    answering = decision({"type": "answer", "answer": ANSWER})
    chat_server.script(
        decision({"type": "proceed_to_answer"}),
        Reply(body=answering.body, chunk_delay=0.15),
    )
    providers = {"house": ProviderConfig(base_url=chat_server.url, models=("m",), stream=True)}
    url = f"sqlite:///{tmp_path / 'l.db'}"
    async with configured_harness(temporal_server, url, tmp_path, providers) as harness:
        order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
        order = order.model_copy(update={"model_override": ModelOverride(provider="house")})
        handle = await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )
        ledger, heard = harness.runtime.ledger, list[Said]()
        follower = AnswerFollower(ledger, handle.id)
        following = asyncio.create_task(follower.follow(heard.append))
        events = await harness.finish(handle.id)
        following.cancel()
        heard += follower.poll()
        run, stream = ledger.get_run(handle.id), ledger.read_stream(handle.id)

    assert events[-1].kind == "run_completed" and run is not None and run.answer == ANSWER
    assert all(r.body.get("stream") is True for r in chat_server.requests)
    tokens = [s for s in heard if s.kind == "token"]
    assert len(tokens) > 3, heard  # it arrived in pieces, while the model wrote it
    assert "".join(t.text for t in tokens) == ANSWER
    assert [t.offset for t in tokens] == [
        sum(len(t.text) for t in tokens[:i]) for i in range(len(tokens))
    ]
    assert stream.stream is not None and stream.stream.status == "done" and stream.text == ANSWER


async def test_a_slow_first_token_is_a_heartbeat_not_a_failure(
    temporal_server: DevServer, tmp_path: Path, chat_server: ChatServer
) -> None:
    """The provider says nothing for longer than the step's heartbeat time-out (10 s): the
    step heartbeats while it waits, so the call is neither timed out nor asked twice."""
    answering = decision({"type": "answer", "answer": ANSWER})
    chat_server.script(
        decision({"type": "proceed_to_answer"}), Reply(body=answering.body, delay=13)
    )
    providers = {"house": ProviderConfig(base_url=chat_server.url, models=("m",), stream=True)}
    url = f"sqlite:///{tmp_path / 'l.db'}"
    async with configured_harness(temporal_server, url, tmp_path, providers) as harness:
        order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
        order = order.model_copy(update={"model_override": ModelOverride(provider="house")})
        handle = await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )
        events = await harness.finish(handle.id)
    assert events[-1].kind == "run_completed"
    assert len(chat_server.requests) == 2  # no attempt was given up on and asked again
    called = [e for e in events if e.kind == "model_called"]
    assert [c.attempt for c in called] == [1, 1]  # type: ignore[attr-defined]
