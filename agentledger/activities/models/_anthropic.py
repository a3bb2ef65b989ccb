"""Anthropic's Messages API through the ``anthropic`` SDK (``api = "anthropic_messages"``).

The fixed prefix (the system text) carries a ``cache_control`` breakpoint, Anthropic's prompt
cache: every step of every run of the same profile and step shares it. Decisions are native tool
calls (``tool_choice: any``); in the ``json_schema`` form, a JSON object under
``output_config.format`` (Anthropic's structured outputs).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
from anthropic.types import Message

from agentledger.activities.models._errors import StreamCut
from agentledger.activities.models._prompt import output_schema, prompt, tools
from agentledger.activities.models._reply import Called, Said
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelUsage, ReplyDeltas
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile

CLIENT = anthropic.Anthropic
"""The SDK's client class for this protocol (``_sdk`` makes it)."""


def request(
    packet: ContextPacket, profile: ModelProfile, settings: ProviderSettings
) -> dict[str, Any]:
    system, user = prompt(packet, settings)
    block: dict[str, Any] = {"type": "text", "text": system}
    if settings.send_prompt_cache_key:
        block["cache_control"] = {"type": "ephemeral"}
    body: dict[str, Any] = {
        "model": profile.model,
        "system": [block],
        "messages": [{"role": "user", "content": user}],
        "max_tokens": settings.max_tokens,
    }
    # No sampling settings: this Messages API version takes none (``temperature`` is refused).
    if settings.decisions == "json_schema" and settings.structured_output == "json_schema":
        schema = output_schema(packet, settings)
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    offered = tools(packet, settings)
    if offered:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in offered
        ]
        forced = settings.decisions == "tools"
        # One proposal per step: the authority gate judges calls one at a time.
        body["tool_choice"] = {
            "type": "any" if forced else "auto",
            "disable_parallel_tool_use": True,
        }
    return body


def call(client: anthropic.Anthropic, body: dict[str, Any]) -> tuple[str, Message | None]:
    raw = client.messages.with_raw_response.create(**body)
    text = raw.http_response.text
    try:
        parsed = raw.parse()
    except (ValueError, TypeError, anthropic.APIResponseValidationError):
        return text, None
    return text, parsed if isinstance(parsed, Message) else None


def stream(
    client: anthropic.Anthropic, body: dict[str, Any], tap: ReplyDeltas
) -> tuple[str, Message | None]:
    """``call``, streamed: text deltas and each ``tool_use`` block's input deltas go to
    ``tap``; the SDK puts the events back together into the whole message."""
    names: dict[int, str] = {}
    with client.messages.stream(**body) as events:
        for event in events:
            if event.type == "content_block_start" and event.content_block.type == "tool_use":
                names[event.index] = event.content_block.name
            elif event.type == "content_block_delta":
                if event.delta.type == "text_delta":
                    tap.text(event.delta.text)
                elif event.delta.type == "input_json_delta" and event.index in names:
                    ordinal = sorted(names).index(event.index)
                    tap.call(ordinal, names[event.index], event.delta.partial_json)
        message = events.get_final_message()
    if message.stop_reason is None:
        raise StreamCut("the message never reached a stop reason")
    return message.model_dump_json(exclude_unset=True), message


def said(message: Message | None, raw: str, decision_tools: frozenset[str]) -> Said | str:
    if message is None:
        return "the provider's response body is not JSON (or not a message)"
    text, calls = "", []
    for block in message.content or ():
        if block.type == "text":
            text += block.text
        elif block.type == "tool_use":
            calls.append(Called(block.name, json.dumps(block.input)))
    return Said(
        text=text,
        calls=tuple(calls),
        cut_off=message.stop_reason == "max_tokens",
        refusal="refused" if message.stop_reason == "refusal" else "",
        decision_tools=decision_tools,
        raw=raw,
    )


def usage(message: Message | None, estimated_input: int) -> ModelUsage:
    """Anthropic counts cached and newly cached input apart from ``input_tokens``: the input is
    their sum, of which the cache reads are the cached part."""
    reported = message.usage if message is not None else None
    if reported is None:
        return ModelUsage(input_tokens=estimated_input, estimated=True)
    read = reported.cache_read_input_tokens or 0
    written = reported.cache_creation_input_tokens or 0
    return ModelUsage(
        input_tokens=reported.input_tokens + read + written,
        cached_tokens=read,
        output_tokens=reported.output_tokens,
        estimated=False,
    )
