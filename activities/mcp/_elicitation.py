"""Elicitation: a server asking a human for input in the middle of a tool call.

The client never answers on its own: without a handler every request is declined, and every
request is recorded (with a digest) in the call's output. How the runtime routes it to a human:

1. the first call runs with the default handler; the server gets ``decline`` and the receipt's
   output lists the request under ``elicitations`` (message, requested schema, digest);
2. the workflow turns that into an approval request bound to the elicitation digest, like any
   consequential proposal;
3. once a human approves with content, the call is re-run with
   ``PreapprovedElicitations({digest: content})``, which accepts exactly that request and
   declines any other. A tool activity never blocks for hours waiting on a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import JsonValue

from domain._model import Frozen
from domain.canonical import sha256_hex


class ElicitationRequest(Frozen):
    mode: Literal["form", "url"]
    message: str
    requested_schema: dict[str, JsonValue] | None = None
    url: str | None = None

    @property
    def digest(self) -> str:
        return sha256_hex(self.model_dump(mode="json"))


ElicitationValue = str | int | float | bool | list[str] | None


class ElicitationAnswer(Frozen):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitationValue] | None = None


ElicitationHandler = Callable[[ElicitationRequest], ElicitationAnswer]


def decline_all(request: ElicitationRequest) -> ElicitationAnswer:
    return ElicitationAnswer(action="decline")


class PreapprovedElicitations:
    """Accept only requests whose digest a human approved, with the approved content."""

    def __init__(self, answers: Mapping[str, dict[str, ElicitationValue]]) -> None:
        self._answers = dict(answers)

    def __call__(self, request: ElicitationRequest) -> ElicitationAnswer:
        content = self._answers.get(request.digest)
        if content is None:
            return ElicitationAnswer(action="decline")
        return ElicitationAnswer(action="accept", content=content)
