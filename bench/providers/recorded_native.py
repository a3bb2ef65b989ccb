"""Replies in the exact shapes OpenAI's Responses API and Anthropic's Messages API send.

Sources, field for field:
- OpenAI Responses: the response object, ``function_call`` and ``reasoning`` output items and
  ``usage.input_tokens_details.cached_tokens`` as in the API reference
  (platform.openai.com/docs/api-reference/responses/object) and openai-python's
  ``tests/api_resources/test_responses.py`` / ``src/openai/types/responses/response.py``.
- Anthropic Messages: the message object, ``tool_use`` blocks, ``stop_reason`` values and the
  ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` usage fields as in the API
  reference (docs.anthropic.com/en/api/messages) and anthropic-sdk-python's
  ``src/anthropic/types/message.py``; errors as in docs.anthropic.com/en/api/errors
  (``{"type": "error", "error": {"type": "overloaded_error", ...}}`` with HTTP 529).
"""

from __future__ import annotations

import json
from typing import Any

from bench.providers.chat_server import Reply


def openai_response(
    *output: dict[str, Any],
    status: str = "completed",
    incomplete: str | None = None,
    input_tokens: int = 1204,
    cached_tokens: int = 1024,
    output_tokens: int = 58,
) -> dict[str, Any]:
    return {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-4.1-2025-04-14",
        "output": list(output),
        "parallel_tool_calls": False,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 0.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "required",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached_tokens},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
        "user": None,
        "metadata": {},
    }


def response_message(text: str = "", refusal: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "output_text", "text": text, "annotations": []})
    if refusal:
        content.append({"type": "refusal", "refusal": refusal})
    return {
        "type": "message",
        "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
        "status": "completed",
        "role": "assistant",
        "content": content,
    }


def function_call(
    name: str, arguments: dict[str, Any], call_id: str = "call_12345xyz"
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_67ccd3acc8d48190a77525dc6de64b55",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def reasoning(summary: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": "rs_6820f383d7c08191846711c5df8233bc",
        "summary": [{"type": "summary_text", "text": summary}],
    }


def anthropic_message(
    *content: dict[str, Any],
    stop_reason: str = "end_turn",
    input_tokens: int = 310,
    cache_read: int = 1830,
    cache_creation: int = 0,
    output_tokens: int = 64,
) -> dict[str, Any]:
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read,
            "output_tokens": output_tokens,
            "service_tier": "standard",
        },
    }


def tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": "toolu_01A09q90qw90lq917835lq9",
        "name": name,
        "input": arguments,
    }


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thinking_block(thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}


def anthropic_error(status: int, kind: str, message: str, **headers: str) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return Reply(status=status, body=body, headers=headers)
