"""Client-side elicitation handlers (the routing to a human is described in
``domain.elicitation``): decline everything, or accept exactly what a human approved."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import JsonValue

from agentledger.domain import Frozen
from agentledger.domain.elicitation import ElicitationRequest


class ElicitationAnswer(Frozen):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, JsonValue] | None = None
    """What a human approved (already checked against the requested schema)."""


ElicitationHandler = Callable[[ElicitationRequest], ElicitationAnswer]


def decline_all(request: ElicitationRequest) -> ElicitationAnswer:
    return ElicitationAnswer(action="decline")


class PreapprovedElicitations:
    """Accept only requests whose digest a human approved, with the approved content."""

    def __init__(self, answers: Mapping[str, dict[str, JsonValue]]) -> None:
        self._answers = dict(answers)

    def __call__(self, request: ElicitationRequest) -> ElicitationAnswer:
        content = self._answers.get(request.digest)
        if content is None:
            return ElicitationAnswer(action="decline")
        return ElicitationAnswer(action="accept", content=content)
