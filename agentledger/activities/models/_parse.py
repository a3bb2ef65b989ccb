"""A chat-completions response as a ModelReply: a decision to validate, and provider usage.

Nothing here raises for a bad reply. A body that is not JSON, a reply with no choice, truncated
or non-JSON content, a refusal or several tool calls all come back as a ``malformed_reply``
output, which fails ``Decision`` validation in the model step and is recorded as a
``DecisionRejected`` event the next packet shows the model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import JsonValue

from agentledger.activities.ports import ModelReply, ModelUsage

MALFORMED = "malformed_reply"
_RAW_EXCERPT = 500
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_reply(body: bytes, estimated_input: int) -> ModelReply:
    try:
        document = json.loads(body)
    except ValueError:
        raw = body.decode(errors="replace")
        return _malformed("the provider's response body is not JSON", raw, estimated_input)
    if not isinstance(document, dict):
        return _malformed("the response is not a JSON object", str(document), estimated_input)
    usage = parse_usage(document.get("usage"), estimated_input)
    message, finish = _first_choice(document)
    if message is None:
        return ModelReply(
            output=_problem("the response has no choices[0].message", str(document)), usage=usage
        )
    return ModelReply(output=_decision(message, finish), usage=usage)


def parse_usage(raw: Any, estimated_input: int) -> ModelUsage:
    """Provider counts when reported (cached tokens as OpenAI and llama.cpp name them)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("prompt_tokens"), int):
        return ModelUsage(input_tokens=estimated_input, estimated=True)
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return ModelUsage(
        input_tokens=raw["prompt_tokens"],
        cached_tokens=cached if isinstance(cached, int) else 0,
        output_tokens=_int(raw.get("completion_tokens")),
        estimated=False,
    )


def _first_choice(document: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    choices = document.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, ""
    message = choices[0].get("message")
    finish = choices[0].get("finish_reason")
    return (message if isinstance(message, dict) else None), str(finish or "")


def _decision(message: dict[str, Any], finish: str) -> dict[str, JsonValue]:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        return _tool_call(calls, text)
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        return _problem("the model refused", message["refusal"])
    return _structured(text, finish)


def _tool_call(calls: list[Any], rationale: str) -> dict[str, JsonValue]:
    if len(calls) > 1:
        names = [_name(c) for c in calls]
        return _problem(f"{len(calls)} tool calls in one reply; one per step", str(names))
    function = calls[0].get("function") if isinstance(calls[0], dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return _problem("a tool call without a function name", str(calls[0]))
    name, raw_arguments = function["name"], function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw_arguments) if isinstance(raw_arguments, str) else raw_arguments
    except ValueError:
        return _problem(f"tool call {name} has arguments that are not JSON", raw_arguments)
    if not isinstance(arguments, dict):
        return _problem(f"tool call {name} arguments are not an object", str(arguments))
    return {
        "type": "call_tool",
        "proposal": {"tool": name, "arguments": arguments},
        "rationale": rationale.strip(),
    }


def _structured(text: str, finish: str) -> dict[str, JsonValue]:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    candidate = fenced.group(1) if fenced else stripped
    cut = " (the reply was cut off at max_tokens)" if finish == "length" else ""
    if not candidate:
        return _problem(f"the reply is empty{cut}", text)
    try:
        value = json.loads(candidate)
    except ValueError:
        return _problem(f"the reply is not JSON{cut}", text)
    if not isinstance(value, dict):
        return _problem("the reply is JSON but not an object", text)
    return value


def _problem(problem: str, raw: str) -> dict[str, JsonValue]:
    # ``type`` is deliberately not a decision tag: validation fails and the step records it.
    return {"type": MALFORMED, "problem": problem, "raw": raw[:_RAW_EXCERPT]}


def _malformed(problem: str, raw: str, estimated_input: int) -> ModelReply:
    return ModelReply(output=_problem(problem, raw), usage=ModelUsage(input_tokens=estimated_input))


def _name(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    return str(function.get("name")) if isinstance(function, dict) else "?"


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
