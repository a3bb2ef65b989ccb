"""What an answer says so far, read from a reply that is still arriving.

A decision is JSON: the reply's text (``{"type": "answer", "answer": "...", ...}``) or the
arguments of the native ``answer`` tool call (``{"answer": "...", ...}``). ``ReplyTap`` is fed
the deltas the provider streams, parses what has arrived as partial JSON (pydantic-core's
``allow_partial``, which keeps a string that is still being written) and tells its sink the
answer's text each time it grows. Anything that is not an answer (a tool call, ``ask_user``)
never reaches the sink, and nothing here decides anything: the complete reply is parsed and
judged exactly as a reply that was not streamed.
"""

from __future__ import annotations

from typing import Protocol

from pydantic_core import from_json

ANSWER = "answer"


class AnswerSink(Protocol):
    def answer_so_far(self, text: str) -> None:
        """The answer's text as known now (it only grows, unless ``restart`` comes first)."""

    def restart(self) -> None:
        """What was told is void: another model takes the call over from the start."""


class ReplyTap:
    """Fed one reply's deltas; one per model call (``restart`` between fallback routes)."""

    def __init__(self, sink: AnswerSink) -> None:
        self._sink = sink
        self._text = ""
        self._call = ""
        self._call_name: str | None = None
        self._told = ""

    def text(self, delta: str) -> None:
        self._text += delta
        self._tell(answer_in(self._text, tagged=True))

    def call(self, index: int, name: str | None, delta: str) -> None:
        """A delta of native tool call ``index``'s arguments; only the first call is a
        decision (the others are refused with it)."""
        if index != 0:
            return
        self._call_name = name or self._call_name
        self._call += delta
        if self._call_name == ANSWER:
            self._tell(answer_in(self._call, tagged=False))

    def restart(self) -> None:
        self._text, self._call, self._call_name, self._told = "", "", None, ""
        self._sink.restart()

    def _tell(self, answer: str | None) -> None:
        if answer and answer != self._told:
            self._told = answer
            self._sink.answer_so_far(answer)


def answer_in(raw: str, *, tagged: bool) -> str | None:
    """The ``answer`` field of the (partial) JSON object in ``raw``; with ``tagged``, only when
    the object's ``type`` already says it is an answer."""
    start = raw.find("{")
    if start < 0:
        return None
    try:
        value = from_json(raw[start:], allow_partial="trailing-strings")
    except ValueError:
        return None
    if not isinstance(value, dict) or (tagged and value.get("type") != ANSWER):
        return None
    text = value.get(ANSWER)
    return text if isinstance(text, str) else None
