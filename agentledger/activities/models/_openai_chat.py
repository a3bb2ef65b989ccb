"""OpenAI Chat Completions through the ``openai`` SDK: ``openai`` and ``openai_compatible``
(vLLM, llama.cpp, Ollama, Gemini's compatible endpoint, Azure OpenAI)."""

from __future__ import annotations

from typing import Any

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from agentledger.activities.models._errors import StreamCut
from agentledger.activities.models._prompt import messages, text_format, tools
from agentledger.activities.models._reply import Called, Said
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelUsage, ReplyDeltas
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile

CLIENT = openai.OpenAI
"""The SDK's client class for this protocol (``_sdk`` makes it)."""


def request(
    packet: ContextPacket, profile: ModelProfile, settings: ProviderSettings
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": profile.model,
        "messages": messages(packet, settings),
        settings.max_tokens_param: settings.max_tokens,
    }
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.seed is not None:
        body["seed"] = settings.seed
    offered = tools(packet, settings)
    if offered:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in offered
        ]
        body["tool_choice"] = "required" if settings.decisions == "tools" else "auto"
        # One proposal per step: the authority gate judges calls one at a time.
        body["parallel_tool_calls"] = False
    response_format = text_format(packet, settings, nested=True)
    if response_format is not None:
        body["response_format"] = response_format
    if settings.send_prompt_cache_key:
        body["prompt_cache_key"] = packet.cache_key
    return body


def call(client: openai.OpenAI, body: dict[str, Any]) -> tuple[str, ChatCompletion | None]:
    """The raw body (for the record) and the SDK's reading of it (``None``: not a completion)."""
    raw = client.chat.completions.with_raw_response.create(**body)
    text = raw.http_response.text
    try:
        parsed = raw.parse()
    except (ValueError, TypeError, openai.APIResponseValidationError):
        return text, None
    return text, parsed if isinstance(parsed, ChatCompletion) else None


def stream(
    client: openai.OpenAI, body: dict[str, Any], tap: ReplyDeltas
) -> tuple[str, ChatCompletion | None]:
    """``call``, streamed: each chunk's text and tool-call arguments go to ``tap``, and the
    chunks are put back together into the completion the provider would have sent whole."""
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    with client.chat.completions.create(
        **body, stream=True, stream_options={"include_usage": True}
    ) as chunks:
        for chunk in chunks:
            state.handle_chunk(chunk)
            for choice in chunk.choices[:1]:
                if choice.delta.content:
                    tap.text(choice.delta.content)
                for call in choice.delta.tool_calls or ():
                    function = call.function
                    if function is not None:
                        tap.call(call.index, function.name, function.arguments or "")
    try:
        completion: ChatCompletion = state.get_final_completion()
    except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as stopped:
        if stopped.completion is None:
            raise
        completion = stopped.completion  # truncated or filtered: judged as when sent whole
    if not completion.choices or completion.choices[0].finish_reason is None:
        raise StreamCut("no chunk carried a finish reason")
    return completion.model_dump_json(exclude_unset=True), completion


def said(completion: ChatCompletion | None, raw: str, decision_tools: frozenset[str]) -> Said | str:
    """The reply reduced, or what is wrong with it."""
    if completion is None:
        return "the provider's response body is not JSON (or not a chat completion)"
    if not completion.choices or completion.choices[0].message is None:
        return "the response has no choices[0].message"
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(
        Called(c.function.name, c.function.arguments)
        for c in message.tool_calls or ()
        if isinstance(c, ChatCompletionMessageFunctionToolCall)
    )
    return Said(
        text=message.content or "",
        calls=calls,
        cut_off=choice.finish_reason == "length",
        refusal=message.refusal or "",
        decision_tools=decision_tools,
        raw=raw,
    )


def usage(completion: ChatCompletion | None, estimated_input: int) -> ModelUsage:
    """Provider counts when reported (cached tokens as OpenAI and llama.cpp name them)."""
    reported = completion.usage if completion is not None else None
    if reported is None or not isinstance(reported.prompt_tokens, int):
        return ModelUsage(input_tokens=estimated_input, estimated=True)
    details = reported.prompt_tokens_details
    cached = details.cached_tokens if details is not None else None
    return ModelUsage(
        input_tokens=reported.prompt_tokens,
        cached_tokens=cached if isinstance(cached, int) else 0,
        output_tokens=reported.completion_tokens
        if isinstance(reported.completion_tokens, int)
        else 0,
        estimated=False,
    )
