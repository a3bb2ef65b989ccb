"""Streamed replies: the answer reaches the tap as it grows; the decision is the whole reply's.

The local chat server streams a scripted reply as its provider does (``bench.providers.streams``,
after each provider's streaming reference: chat-completion chunks, Responses events, Messages
events; text and arguments a few characters at a time) to a request that asks for a stream.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from agentledger.activities.models import (
    MALFORMED,
    ProviderClient,
    ReplyTap,
    decide_along_chain,
    openai_compatible_profile,
    provider_profile,
)
from agentledger.activities.ports import ModelReply
from agentledger.domain.model_profile import ModelRoute
from bench.providers import packets
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import calls, decision, error, openai_completion, tool_call
from bench.providers.recorded_native import (
    anthropic_message,
    function_call,
    openai_response,
    reasoning,
    thinking_block,
    tool_use,
)

TEXT = 'Your refund of 42.00 EUR for order ord_4821 is on its way ("late delivery" policy).'
ANSWER = {"type": "answer", "answer": TEXT, "supporting_source_ids": []}


class Heard:
    """An ``AnswerSink`` that keeps what it is told."""

    def __init__(self) -> None:
        self.told: list[str] = []
        self.restarts = 0

    def answer_so_far(self, text: str) -> None:
        self.told.append(text)

    def restart(self) -> None:
        self.restarts += 1


def _streamed(server: ChatServer, reply: Reply, **settings: Any) -> tuple[ModelReply, Heard]:
    server.script(reply)
    profile = openai_compatible_profile(server.url, "m", stream=True, **settings)
    heard, client = Heard(), ProviderClient()
    try:
        return client.decide_streaming(packets.draft_answer(), profile, ReplyTap(heard)), heard
    finally:
        client.close()


def _whole(server: ChatServer, reply: Reply, **settings: Any) -> ModelReply:
    server.script(reply)
    client = ProviderClient()
    try:
        return client.decide(packets.draft_answer(), openai_compatible_profile(server.url, "m"))
    finally:
        client.close()


def test_a_streamed_answer_grows_and_decides_as_the_whole_reply(chat_server: ChatServer) -> None:
    streamed, heard = _streamed(chat_server, decision(ANSWER))
    assert chat_server.requests[-1].body["stream"] is True
    assert streamed.output == _whole(chat_server, decision(ANSWER)).output
    assert streamed.usage.input_tokens == 812 and not streamed.usage.estimated
    assert len(heard.told) > 5 and heard.told[-1] == TEXT
    assert all(b.startswith(a) for a, b in zip(heard.told, heard.told[1:], strict=False))


def test_a_native_answer_tool_call_streams_its_answer_argument(chat_server: ChatServer) -> None:
    fields = {k: v for k, v in ANSWER.items() if k != "type"}
    streamed, heard = _streamed(chat_server, calls(tool_call("answer", fields)), decisions="tools")
    assert streamed.output["type"] == "answer" and streamed.output["answer"] == TEXT
    assert heard.told[-1] == TEXT and len(heard.told) > 5


def test_a_reply_that_is_no_answer_tells_the_customer_nothing(chat_server: ChatServer) -> None:
    ask = {"type": "ask_user", "question": "Which order do you mean?"}
    streamed, heard = _streamed(chat_server, Reply(body=json.loads(decision(ask).payload())))
    assert streamed.output["type"] == "ask_user"
    assert heard.told == []


def test_an_answer_not_streamed_by_configuration_is_sent_whole(chat_server: ChatServer) -> None:
    chat_server.script(decision(ANSWER))
    heard, client = Heard(), ProviderClient()
    profile = openai_compatible_profile(chat_server.url, "m")  # stream is off unless configured
    try:
        client.decide_streaming(packets.draft_answer(), profile, ReplyTap(heard))
    finally:
        client.close()
    assert "stream" not in chat_server.requests[-1].body
    assert heard.told == []


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_streamed_reply_stopped_short_is_judged_as_when_sent_whole(
    chat_server: ChatServer, reason: str
) -> None:
    """The SDK's stream helper raises on these finish reasons; the reply is the model's all the
    same, for the step to reject and record (never a provider failure to retry)."""
    cut = openai_completion(content='{"type": "answer", "answer": "Your ref', finish_reason=reason)
    streamed, heard = _streamed(chat_server, Reply(body=cut))
    whole = _whole(chat_server, Reply(body=cut))
    assert streamed.output["type"] == whole.output["type"] == MALFORMED
    assert streamed.output["problem"] == whole.output["problem"]  # "raw" is each one's own
    assert heard.told and heard.told[-1] == "Your ref"  # the step's rejection ends the stream


def test_a_stream_cut_mid_way_is_a_retryable_failure_after_what_was_told(
    chat_server: ChatServer,
) -> None:
    cut = Reply(body=json.loads(decision(ANSWER).payload()), cut_after=12)
    chat_server.script(cut)
    heard, client = Heard(), ProviderClient()
    profile = openai_compatible_profile(chat_server.url, "m", stream=True)
    try:
        with pytest.raises(ApplicationError) as failed:
            client.decide_streaming(packets.draft_answer(), profile, ReplyTap(heard))
    finally:
        client.close()
    assert not failed.value.non_retryable, failed.value
    assert heard.told and TEXT.startswith(heard.told[-1]) and heard.told[-1] != TEXT


def test_a_fallback_route_restarts_what_the_customer_was_told(chat_server: ChatServer) -> None:
    profile = openai_compatible_profile(chat_server.url, "m", stream=True)
    route_on = ModelRoute(provider=profile.provider, model="m2")
    profile = profile.model_copy(update={"fallbacks": (route_on,)})
    chat_server.script(error(503, "overloaded"), decision(ANSWER))
    heard, client = Heard(), ProviderClient()
    models = {profile.provider: client}
    try:
        reply, route = decide_along_chain(models, packets.draft_answer(), profile, ReplyTap(heard))
    finally:
        client.close()
    assert route == 1 and reply.output["answer"] == TEXT
    assert heard.restarts == 1 and heard.told[-1] == TEXT
    assert [r.body["model"] for r in chat_server.requests] == ["m", "m2"]


# ----------------------------------------------- Responses and Messages, streamed as they stream


def _native(
    server: ChatServer, kind: str, reply: Reply, stream: bool, **settings: Any
) -> tuple[ModelReply, Heard]:
    server.script(reply)
    url = server.url.removesuffix("/v1") if kind == "anthropic" else server.url
    profile = provider_profile(kind, url, "m", api_key_env="K", stream=stream, **settings)  # type: ignore[arg-type]
    heard, client = Heard(), ProviderClient(environ={"K": "sk-test-native"})
    try:
        return client.decide_streaming(packets.draft_answer(), profile, ReplyTap(heard)), heard
    finally:
        client.close()


def test_a_responses_answer_streams_through_its_tool_and_decides_as_whole(
    chat_server: ChatServer,
) -> None:
    body = openai_response(reasoning("Known."), function_call("answer", {"answer": TEXT}))
    streamed, heard = _native(chat_server, "openai", Reply(body=body), True, api="responses")
    whole, _ = _native(chat_server, "openai", Reply(body=body), False, api="responses")
    assert chat_server.requests[0].body["stream"] is True
    assert "stream" not in chat_server.requests[1].body
    assert streamed.output == whole.output and streamed.output["answer"] == TEXT
    assert streamed.usage == whole.usage and streamed.usage.cached_tokens == 1024
    assert heard.told[-1] == TEXT and len(heard.told) > 5


def test_an_anthropic_answer_streams_after_its_thinking_and_decides_as_whole(
    chat_server: ChatServer,
) -> None:
    body = anthropic_message(
        thinking_block("The refund needs an approver."),
        tool_use("answer", {"answer": TEXT}),
        stop_reason="tool_use",
    )
    streamed, heard = _native(chat_server, "anthropic", Reply(body=body), True)
    whole, _ = _native(chat_server, "anthropic", Reply(body=body), False)
    assert chat_server.requests[0].body["stream"] is True
    assert streamed.output == whole.output and streamed.output["answer"] == TEXT
    assert streamed.usage == whole.usage and streamed.usage.cached_tokens == 1830
    assert heard.told[-1] == TEXT and len(heard.told) > 5
    assert not any("approver" in told for told in heard.told)  # thinking is never told


@pytest.mark.parametrize("kind", ["anthropic", "responses"])
def test_a_native_stream_cut_mid_way_is_retryable(chat_server: ChatServer, kind: str) -> None:
    if kind == "anthropic":
        body = anthropic_message(tool_use("answer", {"answer": TEXT}), stop_reason="tool_use")
        settings: dict[str, Any] = {}
    else:
        body = openai_response(function_call("answer", {"answer": TEXT}))
        settings = {"api": "responses"}
    cut = Reply(body=body, cut_after=8)
    with pytest.raises(ApplicationError) as failed:
        _native(chat_server, "openai" if kind == "responses" else kind, cut, True, **settings)
    assert failed.value.type == "ModelUnavailable" and not failed.value.non_retryable
