"""A scripted whole reply as each provider streams it, for the local chat server.

The shapes follow each provider's published streaming reference:
- **Chat Completions.** ``chat.completion.chunk`` objects: the role, then the text and each tool
  call's arguments a few characters at a time, the finish reason, and a usage chunk with empty
  ``choices`` (``stream_options.include_usage``), ended by ``data: [DONE]``.
  Source: platform.openai.com/docs/api-reference/chat-streaming.
- **Responses.** Typed events (``event:`` and ``data:`` lines, each with a ``sequence_number``):
  ``response.created``, ``response.output_item.added``, ``response.output_text.delta`` and
  ``response.function_call_arguments.delta`` pieces, ``response.output_item.done``,
  ``response.completed`` carrying the whole response.
  Source: platform.openai.com/docs/api-reference/responses-streaming.
- **Anthropic Messages.** ``message_start`` (empty content), then for each block
  ``content_block_start``, its ``text_delta``, ``input_json_delta`` or ``thinking_delta``
  pieces and ``content_block_stop``, then ``message_delta`` (stop reason, output tokens) and
  ``message_stop``. Source: docs.anthropic.com/en/docs/build-with-claude/streaming.

Each function returns ``(event name or None, data)`` pairs.
"""

from __future__ import annotations

import json
from typing import Any

Event = tuple[str | None, dict[str, Any] | str]
SIZE = 6
"""Characters per piece of text or arguments."""


def pieces(text: str) -> list[str]:
    return [text[i : i + SIZE] for i in range(0, len(text), SIZE)]


def events_for(path: str, reply: dict[str, Any]) -> list[Event]:
    if path.endswith("/responses"):
        return response_events(reply)
    if path.endswith("/messages"):
        return message_events(reply)
    return [*((None, chunk) for chunk in chat_chunks(reply)), (None, "[DONE]")]


def chat_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    head = {k: completion.get(k) for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message, chunks = choice["message"], []

    def delta(**fields: Any) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}

    chunks.append(delta(role="assistant", content=""))
    chunks += [delta(content=p) for p in pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or ()):
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        start = {"index": index, "id": call["id"], "type": "function"}
        chunks.append(delta(tool_calls=[{**start, "function": {"name": name, "arguments": ""}}]))
        for p in pieces(arguments):
            chunks.append(delta(tool_calls=[{"index": index, "function": {"arguments": p}}]))
    finish = {"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason", "stop")}
    chunks.append({**head, "choices": [finish]})
    if completion.get("usage"):
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


def response_events(response: dict[str, Any]) -> list[Event]:
    found: list[tuple[str, dict[str, Any]]] = []
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    found.append(("response.created", {"response": started}))
    for index, item in enumerate(response["output"]):
        found += _response_item(index, item)
    found.append(("response.completed", {"response": response}))
    return [
        (name, {"type": name, "sequence_number": n, **data}) for n, (name, data) in enumerate(found)
    ]


def _response_item(index: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    at = {"output_index": index, "item_id": item.get("id", "")}
    if item["type"] == "function_call":
        opened = {**item, "arguments": "", "status": "in_progress"}
        deltas = [
            ("response.function_call_arguments.delta", {**at, "delta": p})
            for p in pieces(item["arguments"])
        ]
    elif item["type"] == "message":
        opened = {**item, "content": [], "status": "in_progress"}
        texts = [c["text"] for c in item["content"] if c["type"] == "output_text"]
        deltas = [
            ("response.output_text.delta", {**at, "content_index": 0, "delta": p})
            for p in pieces("".join(texts))
        ]
    else:
        opened, deltas = item, []
    return [
        ("response.output_item.added", {"output_index": index, "item": opened}),
        *deltas,
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]


def message_events(message: dict[str, Any]) -> list[Event]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    found: list[Event] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        found += _message_block(index, block)
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    ended = {
        "type": "message_delta",
        "delta": stop,
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    found += [("message_delta", ended), ("message_stop", {"type": "message_stop"})]
    return found


def _message_block(index: int, block: dict[str, Any]) -> list[Event]:
    if block["type"] == "tool_use":
        opened: dict[str, Any] = {**block, "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": p}
            for p in pieces(json.dumps(block["input"]))
        ]
    elif block["type"] == "thinking":
        opened = {**block, "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        opened = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
    started = {"type": "content_block_start", "index": index, "content_block": opened}
    return [
        ("content_block_start", started),
        *(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]
