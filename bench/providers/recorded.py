"""Replies in the exact shapes providers send, to script the local chat server with.

``openai_*`` follow OpenAI's chat-completions response (with usage details); ``LLAMA_CPP_REPLY``
is a reply captured from the llama.cpp server (xllamacpp, SmolLM2-135M) on this machine.
"""

from __future__ import annotations

import json
from typing import Any

from bench.providers.chat_server import Reply


def openai_completion(
    *,
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    prompt_tokens: int = 812,
    cached_tokens: int = 512,
    completion_tokens: int = 37,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-AZ9q0rT1",
        "object": "chat.completion",
        "created": 1764460800,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_6f2eabb9a5",
    }


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def decision(value: dict[str, Any], **usage: Any) -> Reply:
    return Reply(body=openai_completion(content=json.dumps(value), **usage))


def calls(*entries: dict[str, Any]) -> Reply:
    return Reply(body=openai_completion(tool_calls=list(entries), finish_reason="tool_calls"))


def error(status: int, message: str, **headers: str) -> Reply:
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "server_error", "code": None}},
        headers=headers,
    )


LLAMA_CPP_REPLY: dict[str, Any] = {
    "choices": [
        {
            "finish_reason": "stop",
            "index": 0,
            "message": {
                "role": "assistant",
                "content": '{\n    "type": "proceed_to_answer",\n    "rationale": "order known"}',
            },
        }
    ],
    "created": 1796008936,
    "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "system_fingerprint": "b0-unknown",
    "object": "chat.completion",
    "usage": {
        "completion_tokens": 21,
        "prompt_tokens": 640,
        "total_tokens": 661,
        "prompt_tokens_details": {"cached_tokens": 598},
    },
    "id": "chatcmpl-itCnXwVxBqqjYft0xASGOTCzQF1VSM9e",
    "timings": {"cache_n": 598, "prompt_n": 42, "predicted_n": 21},
}
