"""What the client makes of replies: decisions, usage, rejections and typed provider errors."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from temporalio.exceptions import ApplicationError

from agentledger.activities.models import (
    MALFORMED,
    ProviderClient,
    openai_compatible_profile,
)
from agentledger.activities.ports import ModelReply
from agentledger.domain.decisions import CallTool, Decision, ProceedToAnswer
from bench.providers import packets
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import LLAMA_CPP_REPLY, calls, decision, error, tool_call

SECRET = "sk-test-9f8e7d6c5b4a"
DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)


def _decide(server: ChatServer, *replies: Reply, **settings: Any) -> ModelReply:
    server.script(*replies)
    profile = openai_compatible_profile(server.url, "m", api_key_env="TEST_MODEL_KEY", **settings)
    client = ProviderClient(environ={"TEST_MODEL_KEY": SECRET})
    try:
        return client.decide(packets.choose_next_action(), profile)
    finally:
        client.close()


def _failure(server: ChatServer, *replies: Reply, **settings: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        _decide(server, *replies, **settings)
    assert SECRET not in str(caught.value)
    return caught.value


def _content(content: str | None, *, finish_reason: str = "stop", **fields: str) -> Reply:
    message = {"role": "assistant", "content": content, **fields}
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return Reply(body={"choices": [choice]})


def _rejected(reply: ModelReply) -> str:
    with pytest.raises(ValidationError):
        DECISION.validate_python(reply.output)
    assert reply.output["type"] == MALFORMED
    return str(reply.output["problem"])


def test_a_structured_reply_becomes_a_decision_with_provider_usage(
    chat_server: ChatServer,
) -> None:
    reply = _decide(chat_server, decision({"type": "proceed_to_answer", "rationale": "known"}))
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    assert (reply.usage.input_tokens, reply.usage.cached_tokens) == (812, 512)
    assert reply.usage.output_tokens == 37 and reply.usage.estimated is False


def test_the_api_key_comes_from_the_named_variable_as_a_bearer_token(
    chat_server: ChatServer,
) -> None:
    _decide(chat_server, decision({"type": "proceed_to_answer"}))
    assert chat_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert chat_server.requests[0].path == "/v1/chat/completions"


def test_a_native_tool_call_becomes_a_call_tool_proposal(chat_server: ChatServer) -> None:
    reply = _decide(chat_server, calls(tool_call("get_order", {"order_id": "ord_4821"})))
    parsed = DECISION.validate_python(reply.output)
    assert isinstance(parsed, CallTool)
    assert parsed.proposal.tool == "get_order"
    assert parsed.proposal.arguments == {"order_id": "ord_4821"}


def test_a_recorded_llama_cpp_reply_parses_with_its_cache_hits(chat_server: ChatServer) -> None:
    reply = _decide(chat_server, Reply(body=LLAMA_CPP_REPLY))
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    assert reply.usage.cached_tokens == 598


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(body=b"<html>502 upstream hiccup</html>"), "body is not JSON"),
        (Reply(body={"object": "chat.completion", "choices": []}), "no choices"),
        (_content("Sure! I'll check."), "not JSON"),
        (_content('{"type": "ans', finish_reason="length"), "cut off"),
        (calls(tool_call("get_order", {}), tool_call("get_customer", {}, "c2")), "2 tool calls"),
        (_content(None, refusal="I can't help with that"), "refused"),
    ],
    ids=["garbage-body", "no-choices", "prose", "truncated", "two-calls", "refusal"],
)
def test_a_malformed_reply_is_returned_for_the_step_to_reject(
    chat_server: ChatServer, reply: Reply, problem: str
) -> None:
    assert problem in _rejected(_decide(chat_server, reply))


def test_a_fenced_json_reply_is_accepted(chat_server: ChatServer) -> None:
    fenced = '```json\n{"type": "proceed_to_answer"}\n```'
    reply = _decide(chat_server, Reply(body={"choices": [{"message": {"content": fenced}}]}))
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    assert reply.usage.estimated is True  # no usage reported: the packet's estimate stands


def test_429_is_retryable_after_the_servers_retry_after(chat_server: ChatServer) -> None:
    failure = _failure(chat_server, error(429, "slow down", **{"Retry-After": "2"}))
    assert failure.type == "ModelRateLimited" and not failure.non_retryable
    assert failure.next_retry_delay == timedelta(seconds=2)


@pytest.mark.parametrize("status", [500, 502, 503, 408])
def test_server_errors_are_retryable_and_the_client_itself_never_retries(
    chat_server: ChatServer, status: int
) -> None:
    failure = _failure(chat_server, error(status, "overloaded"), decision({"type": "answer"}))
    assert failure.type == "ModelServerError" and not failure.non_retryable
    assert len(chat_server.requests) == 1 and chat_server.remaining() == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_client_errors_are_final(chat_server: ChatServer, status: int) -> None:
    failure = _failure(chat_server, error(status, "no such model"))
    assert failure.type == "ModelRequestRejected" and failure.non_retryable
    assert f"HTTP {status}" in failure.message


def test_a_slow_provider_times_out_retryably(chat_server: ChatServer) -> None:
    slow = Reply(body={"choices": []}, delay=1.0)
    failure = _failure(chat_server, slow, timeout_seconds=0.2)
    assert failure.type == "ModelTimeout" and not failure.non_retryable


def test_a_provider_that_is_not_listening_is_unavailable_retryably() -> None:
    server = ChatServer()
    server.close()  # the port is now closed: connection refused
    failure = _failure(server)
    assert failure.type == "ModelUnavailable" and not failure.non_retryable


def test_an_unset_key_variable_is_a_final_configuration_error(chat_server: ChatServer) -> None:
    profile = openai_compatible_profile(chat_server.url, "m", api_key_env="UNSET_KEY_VAR")
    with pytest.raises(ApplicationError) as caught:
        ProviderClient(environ={}).decide(packets.choose_next_action(), profile)
    assert caught.value.type == "ModelConfigError" and caught.value.non_retryable
    assert "UNSET_KEY_VAR" in caught.value.message and chat_server.requests == []


def test_a_profile_with_bad_settings_is_a_final_configuration_error() -> None:
    profile = openai_compatible_profile("http://127.0.0.1:1/v1", "m").model_copy(
        update={"settings": {"base_url": "ftp://nope", "surprise": 1}}
    )
    with pytest.raises(ApplicationError) as caught:
        ProviderClient(environ={}).decide(packets.choose_next_action(), profile)
    assert caught.value.type == "ModelConfigError" and caught.value.non_retryable
