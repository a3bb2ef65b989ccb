"""OpenAI's Responses API through the ``openai`` SDK (``api = "responses"``).

Stateless on purpose (``store: false``): the run's ledger, not the provider, keeps what was said.
"""

from __future__ import annotations

from typing import Any

import openai
from openai.types.responses import Response

from agentledger.activities.models._errors import StreamCut
from agentledger.activities.models._prompt import prompt, text_format, tools
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
    system, user = prompt(packet, settings)
    body: dict[str, Any] = {
        "model": profile.model,
        "instructions": system,
        "input": [{"role": "user", "content": user}],
        "max_output_tokens": settings.max_tokens,
        "store": False,
    }
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    offered = tools(packet, settings)
    if offered:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": settings.strict_schema,
            }
            for t in offered
        ]
        body["tool_choice"] = "required" if settings.decisions == "tools" else "auto"
        body["parallel_tool_calls"] = False
    constrained = text_format(packet, settings, nested=False)
    if constrained is not None:
        body["text"] = {"format": constrained}
    if settings.send_prompt_cache_key:
        body["prompt_cache_key"] = packet.cache_key
    return body


def call(client: openai.OpenAI, body: dict[str, Any]) -> tuple[str, Response | None]:
    raw = client.responses.with_raw_response.create(**body)
    text = raw.http_response.text
    try:
        parsed = raw.parse()
    except (ValueError, TypeError, openai.APIResponseValidationError):
        return text, None
    return text, parsed if isinstance(parsed, Response) else None


_FINAL = ("response.completed", "response.incomplete", "response.failed")


def stream(
    client: openai.OpenAI, body: dict[str, Any], tap: ReplyDeltas
) -> tuple[str, Response | None]:
    """``call``, streamed: output text and function-call argument deltas go to ``tap``; the
    stream's last event carries the whole response."""
    calls: dict[str, tuple[int, str]] = {}
    final: Response | None = None
    with client.responses.create(**body, stream=True) as events:
        for event in events:
            if event.type == "response.output_text.delta":
                tap.text(event.delta)
            elif event.type == "response.output_item.added" and event.item.type == "function_call":
                calls[event.item.id or ""] = (len(calls), event.item.name)
            elif event.type == "response.function_call_arguments.delta":
                ordinal, name = calls.get(event.item_id, (len(calls), None))
                tap.call(ordinal, name, event.delta)
            elif event.type in _FINAL:
                final = event.response
    if final is None:
        raise StreamCut("no response.completed, .incomplete or .failed event came")
    return final.model_dump_json(exclude_unset=True), final


def said(response: Response | None, raw: str, decision_tools: frozenset[str]) -> Said | str:
    if response is None:
        return "the provider's response body is not JSON (or not a response object)"
    text, refusal, calls = "", "", []
    for item in response.output or ():
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    text += part.text
                elif part.type == "refusal":
                    refusal += part.refusal
        elif item.type == "function_call":
            calls.append(Called(item.name, item.arguments))
    incomplete = response.incomplete_details
    return Said(
        text=text,
        calls=tuple(calls),
        cut_off=incomplete is not None and incomplete.reason == "max_output_tokens",
        refusal=refusal or _content_filtered(response),
        decision_tools=decision_tools,
        raw=raw,
    )


def _content_filtered(response: Response) -> str:
    incomplete = response.incomplete_details
    return (
        "content_filter" if incomplete is not None and incomplete.reason == "content_filter" else ""
    )


def usage(response: Response | None, estimated_input: int) -> ModelUsage:
    reported = response.usage if response is not None else None
    if reported is None:
        return ModelUsage(input_tokens=estimated_input, estimated=True)
    details = reported.input_tokens_details
    return ModelUsage(
        input_tokens=reported.input_tokens,
        cached_tokens=details.cached_tokens if details is not None else 0,
        output_tokens=reported.output_tokens,
        estimated=False,
    )
