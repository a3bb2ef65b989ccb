"""A ContextPacket as a chat-completions request.

Trusted runtime directives (the step's fixed prefix and the instructions) form the system
message, which is also the stable prefix a provider's prompt cache can reuse. Everything else
goes in the user message inside ``<data>`` blocks that carry id, kind, source and trust level,
exactly as ``domain.context.render`` writes them, so the text matches what the token estimate
measured. Only the packet's callable tools become tool definitions; proposable actions stay text.
"""

from __future__ import annotations

from pydantic import JsonValue, ValidationError

from agentledger.activities.models._settings import ProviderSettings
from agentledger.domain.context import ContextPacket
from agentledger.domain.context.render import render_fixed, render_parts
from agentledger.domain.manifest import ModelProfile

_REPLY_RULE = "\nReply with exactly one JSON object that matches OUTPUT_SCHEMA and nothing else."
_TOOL_RULE = " To call a tool, either call it natively or return a call_tool object."


def chat_request(
    packet: ContextPacket, profile: ModelProfile, settings: ProviderSettings
) -> dict[str, JsonValue]:
    body: dict[str, JsonValue] = {
        "model": profile.model,
        "messages": messages(packet, settings),
        settings.max_tokens_param: settings.max_tokens,
    }
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.seed is not None:
        body["seed"] = settings.seed
    if offers_tools(packet, settings):
        body["tools"] = tool_definitions(packet)
        body["tool_choice"] = "auto"
        # One proposal per step: the authority gate judges calls one at a time.
        body["parallel_tool_calls"] = False
    response_format = structured_output(packet, settings)
    if response_format is not None:
        body["response_format"] = response_format
    if settings.send_prompt_cache_key:
        body["prompt_cache_key"] = packet.cache_key
    return body


def messages(packet: ContextPacket, settings: ProviderSettings) -> list[JsonValue]:
    rule = _REPLY_RULE + (_TOOL_RULE if offers_tools(packet, settings) else "")
    system, user = render_fixed(packet) + rule, ""
    for trusted, text in render_parts(packet):
        if trusted:
            system += text
        else:
            user += text
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user.strip() or "(no further context)"},
    ]


def offers_tools(packet: ContextPacket, settings: ProviderSettings) -> bool:
    return settings.native_tools and bool(packet.tools)


def tool_definitions(packet: ContextPacket) -> list[JsonValue]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in packet.tools
    ]


def structured_output(
    packet: ContextPacket, settings: ProviderSettings
) -> dict[str, JsonValue] | None:
    if settings.structured_output == "none":
        return None
    if settings.structured_output == "json_object":
        return {"type": "json_object"}
    schema = packet.output_schema
    return {
        "type": "json_schema",
        "json_schema": {
            "name": schema.name,
            "schema": request_schema(schema.json_schema, settings.max_string_length),
            "strict": settings.strict_schema,
        },
    }


def request_schema(node: JsonValue, max_string_length: int | None) -> JsonValue:
    """The step's schema as sent: the ``type`` tag required (the decision union needs it,
    though pydantic marks it optional for having a default), and optionally a length cap on
    free strings so a small model rambling under constrained decoding still closes its JSON."""
    if isinstance(node, list):
        return [request_schema(n, max_string_length) for n in node]
    if not isinstance(node, dict):
        return node
    sent = {k: request_schema(v, max_string_length) for k, v in node.items()}
    properties = node.get("properties")
    tag = properties.get("type") if isinstance(properties, dict) else None
    if isinstance(tag, dict) and "const" in tag:
        required = node.get("required")
        names = required if isinstance(required, list) else []
        if "type" not in names:
            sent["required"] = ["type", *names]
    free = node.get("type") == "string" and not {"enum", "const", "maxLength"} & node.keys()
    if free and max_string_length is not None:
        sent["maxLength"] = max_string_length
    return sent


def sent_messages(packet: ContextPacket, profile: ModelProfile) -> list[JsonValue] | None:
    """The messages a chat-completions provider is sent for ``packet`` under the run's frozen
    ``profile``, through the very path ``chat_request`` takes; ``None`` when the profile's model
    is not one (a scripted model or the offline playbook reads the packet's structure)."""
    try:
        settings = ProviderSettings.model_validate(profile.settings)
    except ValidationError:
        return None
    return messages(packet, settings)
