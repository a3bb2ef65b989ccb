"""OpenAI's Responses API and Anthropic's Messages API, at the wire, through their own SDKs.

A local HTTP server (``ChatServer``) answers with bodies in the providers' published shapes
(sources named in ``bench.providers.recorded_native``); the real ``openai`` and ``anthropic``
clients send to it. Decisions are native tool calls: each granted tool, and each of the step's
other decisions (``proceed_to_answer``, the answer, ...) as a tool of its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from temporalio.exceptions import ApplicationError

from agentledger.activities.models import MALFORMED, ProviderClient, provider_profile
from agentledger.activities.ports import ModelReply
from agentledger.domain.decisions import Answer, CallTool, Decision, ProceedToAnswer
from bench.providers import packets
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import calls, error, tool_call
from bench.providers.recorded_native import (
    anthropic_error,
    anthropic_message,
    function_call,
    openai_response,
    reasoning,
    response_message,
    text_block,
    thinking_block,
    tool_use,
)

SECRET = "sk-ant-test-5e4d3c2b1a"
DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)


def _root(server: ChatServer) -> str:
    return server.url.removesuffix("/v1")  # the Anthropic SDK adds /v1 itself


def _decide(
    server: ChatServer,
    kind: str,
    *replies: Reply,
    step: str = "choose_next_action",
    **settings: Any,
) -> ModelReply:
    server.script(*replies)
    url = _root(server) if kind == "anthropic" else server.url
    profile = provider_profile(kind, url, "m", api_key_env="NATIVE_KEY", **settings)  # type: ignore[arg-type]
    client = ProviderClient(environ={"NATIVE_KEY": SECRET})
    try:
        return client.decide(getattr(packets, step)(), profile)
    finally:
        client.close()


def _problem(reply: ModelReply) -> str:
    with pytest.raises(ValidationError):
        DECISION.validate_python(reply.output)
    assert reply.output["type"] == MALFORMED
    return str(reply.output["problem"])


def _failure(server: ChatServer, kind: str, *replies: Reply) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        _decide(server, kind, *replies)
    assert SECRET not in str(caught.value)
    return caught.value


# ------------------------------------------------------------------ OpenAI Responses API


def test_a_responses_decision_tool_call_is_the_decision(chat_server: ChatServer) -> None:
    body = openai_response(
        reasoning("The order and policy are known."),
        function_call("proceed_to_answer", {"rationale": "known"}),
    )
    reply = _decide(chat_server, "openai", Reply(body=body), api="responses")
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    assert (reply.usage.input_tokens, reply.usage.cached_tokens) == (1204, 1024)
    assert reply.usage.output_tokens == 58 and not reply.usage.estimated


def test_a_responses_request_offers_granted_tools_and_decisions_as_tools(
    chat_server: ChatServer,
) -> None:
    body = openai_response(function_call("proceed_to_answer", {}))
    _decide(chat_server, "openai", Reply(body=body), api="responses")
    sent = chat_server.requests[-1]
    assert sent.path == "/v1/responses"
    assert sent.headers["Authorization"] == f"Bearer {SECRET}"
    names = [t["name"] for t in sent.body["tools"]]
    granted = [t.name for t in packets.choose_next_action().tools]
    assert names == [*granted, "proceed_to_answer"]
    assert sent.body["tool_choice"] == "required" and sent.body["parallel_tool_calls"] is False
    assert sent.body["store"] is False and "text" not in sent.body
    assert sent.body["prompt_cache_key"] == packets.choose_next_action().cache_key
    assert "Verify the order" in sent.body["instructions"]
    assert '<data id="' in sent.body["input"][0]["content"]


def test_a_responses_call_of_a_granted_tool_is_a_proposal(chat_server: ChatServer) -> None:
    body = openai_response(function_call("get_order", {"order_id": "ord_4821"}))
    reply = _decide(chat_server, "openai", Reply(body=body), api="responses")
    parsed = DECISION.validate_python(reply.output)
    assert isinstance(parsed, CallTool) and parsed.proposal.tool == "get_order"


def test_the_answer_step_answers_through_its_own_tool(chat_server: ChatServer) -> None:
    body = openai_response(function_call("answer", {"answer": "A person will review it."}))
    reply = _decide(chat_server, "openai", Reply(body=body), step="draft_answer", api="responses")
    parsed = DECISION.validate_python(reply.output)
    assert isinstance(parsed, Answer) and parsed.answer == "A person will review it."
    assert [t["name"] for t in chat_server.requests[-1].body["tools"]] == ["answer"]


def test_responses_json_schema_form_sends_the_schema_as_text_format(
    chat_server: ChatServer,
) -> None:
    body = openai_response(response_message('{"type": "proceed_to_answer"}'))
    reply = _decide(
        chat_server, "openai", Reply(body=body), api="responses", decisions="json_schema"
    )
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    sent = chat_server.requests[-1].body["text"]["format"]
    assert sent["type"] == "json_schema"
    assert sent["name"] == packets.choose_next_action().output_schema.name


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            openai_response(
                response_message("Let me think"),
                status="incomplete",
                incomplete="max_output_tokens",
            ),
            "cut off",
        ),
        (openai_response(response_message(refusal="I can't help with that.")), "refused"),
        (
            openai_response(function_call("get_order", {}), function_call("get_customer", {})),
            "2 tool calls",
        ),
        (openai_response(response_message("Sure, checking now.")), "not JSON"),
    ],
    ids=["truncated", "refused", "two-calls", "prose"],
)
def test_an_unusable_responses_reply_is_rejected_with_the_raw_reply(
    chat_server: ChatServer, body: dict[str, Any], problem: str
) -> None:
    reply = _decide(chat_server, "openai", Reply(body=body), api="responses")
    assert problem in _problem(reply)
    assert "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b" in str(reply.output["raw"])


def test_chat_completions_in_tool_form_require_a_tool_and_read_the_decision(
    chat_server: ChatServer,
) -> None:
    reply = _decide(chat_server, "openai", calls(tool_call("proceed_to_answer", {})))
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    sent = chat_server.requests[-1]
    assert sent.path == "/v1/chat/completions" and sent.body["tool_choice"] == "required"
    assert "response_format" not in sent.body


def test_openai_rate_limits_are_retryable_and_the_sdk_itself_never_retries(
    chat_server: ChatServer,
) -> None:
    failure = _failure(
        chat_server, "openai", error(429, "Rate limit reached", **{"retry-after": "3"})
    )
    assert failure.type == "ModelRateLimited" and not failure.non_retryable
    assert len(chat_server.requests) == 1


# ------------------------------------------------------------------ Anthropic Messages API


def test_an_anthropic_decision_tool_use_is_the_decision_with_cache_counts(
    chat_server: ChatServer,
) -> None:
    body = anthropic_message(
        thinking_block("The order is verified."),
        tool_use("proceed_to_answer", {"rationale": "known"}),
        stop_reason="tool_use",
        cache_creation=12,
    )
    reply = _decide(chat_server, "anthropic", Reply(body=body))
    assert isinstance(DECISION.validate_python(reply.output), ProceedToAnswer)
    # Anthropic counts cached input apart: the whole input is the sum.
    assert (reply.usage.input_tokens, reply.usage.cached_tokens) == (310 + 1830 + 12, 1830)
    assert reply.usage.output_tokens == 64 and not reply.usage.estimated


def test_an_anthropic_request_caches_the_fixed_prefix_and_forces_one_tool(
    chat_server: ChatServer,
) -> None:
    body = anthropic_message(tool_use("proceed_to_answer", {}), stop_reason="tool_use")
    _decide(chat_server, "anthropic", Reply(body=body))
    sent = chat_server.requests[-1]
    assert sent.path == "/v1/messages"
    # The key as this SDK version sends it (2.17: a bearer token; earlier ones: x-api-key).
    assert SECRET in (sent.headers.get("x-api-key"), sent.headers["authorization"][7:])
    assert "anthropic-version" in sent.headers
    (system,) = sent.body["system"]
    assert system["cache_control"] == {"type": "ephemeral"} and "Verify the order" in system["text"]
    assert sent.body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    names = [t["name"] for t in sent.body["tools"]]
    assert names == [*(t.name for t in packets.choose_next_action().tools), "proceed_to_answer"]
    assert all("input_schema" in t for t in sent.body["tools"])


def test_an_anthropic_call_to_an_ungranted_tool_is_a_proposal_the_gate_will_judge(
    chat_server: ChatServer,
) -> None:
    body = anthropic_message(
        text_block("Refunding now."),
        tool_use("create_refund", {"order_id": "ord_4821", "amount": 42.5}),
        stop_reason="tool_use",
    )
    parsed = DECISION.validate_python(_decide(chat_server, "anthropic", Reply(body=body)).output)
    assert isinstance(parsed, CallTool) and parsed.proposal.tool == "create_refund"
    assert parsed.rationale == "Refunding now."


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (anthropic_message(text_block('{"type": "proceed'), stop_reason="max_tokens"), "cut off"),
        (anthropic_message(text_block("I can't help."), stop_reason="refusal"), "refused"),
        (anthropic_message(text_block("Happy to help!")), "not JSON"),
    ],
    ids=["truncated", "refused", "prose"],
)
def test_an_unusable_anthropic_reply_is_rejected_with_the_raw_reply(
    chat_server: ChatServer, body: dict[str, Any], problem: str
) -> None:
    reply = _decide(chat_server, "anthropic", Reply(body=body))
    assert problem in _problem(reply)
    assert "msg_013Zva2CMHLNnXjNJJKqJ2EF" in str(reply.output["raw"])


@pytest.mark.parametrize(
    ("reply", "kind", "final"),
    [
        (anthropic_error(529, "overloaded_error", "Overloaded"), "ModelOverloaded", False),
        (
            anthropic_error(429, "rate_limit_error", "Rate limited", **{"retry-after": "4"}),
            "ModelRateLimited",
            False,
        ),
        (anthropic_error(500, "api_error", "Internal server error"), "ModelServerError", False),
        (
            anthropic_error(400, "invalid_request_error", "max_tokens: too large"),
            "ModelRequestRejected",
            True,
        ),
        (
            anthropic_error(401, "authentication_error", "invalid x-api-key"),
            "ModelRequestRejected",
            True,
        ),
    ],
    ids=["529", "429", "500", "400", "401"],
)
def test_anthropic_errors_are_typed_and_the_sdk_itself_never_retries(
    chat_server: ChatServer, reply: Reply, kind: str, final: bool
) -> None:
    failure = _failure(chat_server, "anthropic", reply)
    assert failure.type == kind and failure.non_retryable is final
    assert len(chat_server.requests) == 1


def test_each_kind_declares_its_capabilities_into_the_profile() -> None:
    anthropic = provider_profile("anthropic", "http://127.0.0.1:1", "claude")
    responses = provider_profile("openai", "http://127.0.0.1:1/v1", "gpt", api="responses")
    local = provider_profile(
        "openai_compatible", "http://127.0.0.1:1/v1", "smol", native_tools=False
    )
    assert anthropic.capabilities and anthropic.capabilities.prompt_caching
    assert anthropic.capabilities.native_tool_calls
    assert responses.capabilities and responses.capabilities.reasoning_blocks
    assert local.capabilities and not local.capabilities.native_tool_calls
    assert anthropic.settings["decisions"] == "tools" and "decisions" not in local.settings


def test_a_provider_kind_with_a_protocol_it_does_not_speak_is_refused() -> None:
    with pytest.raises(ValueError, match="anthropic provider speaks anthropic_messages"):
        provider_profile("anthropic", "http://127.0.0.1:1", "claude", api="responses")
