"""What a provider's reply means: a decision to validate, or a problem the step records.

Every SDK adapter reduces its reply to the same few facts (text, tool calls, whether it was cut
off or refused) and hands them here. Nothing here raises for a bad reply: a truncated, refused or
non-JSON reply, or several tool calls, come back as a ``malformed_reply`` output carrying the raw
reply; the model step records it as a ``DecisionRejected`` event with the raw reply bounded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import JsonValue

from agentledger.activities.models._prompt import CALL_TOOL

MALFORMED = "malformed_reply"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class Called:
    """One tool call as the provider reported it; ``arguments`` raw JSON text or a parsed value."""

    name: str
    arguments: str | JsonValue


@dataclass(frozen=True)
class Said:
    """A provider's reply, reduced: its text, its tool calls, and why it stopped."""

    text: str
    calls: tuple[Called, ...] = ()
    cut_off: bool = False
    refusal: str = ""
    decision_tools: frozenset[str] = frozenset()
    raw: str = ""


def decision_of(said: Said) -> dict[str, JsonValue]:
    if said.refusal:
        return problem("the model refused", said.raw or said.refusal)
    if len(said.calls) > 1:
        names = [c.name for c in said.calls]
        return problem(
            f"{len(said.calls)} tool calls in one reply; one per step", said.raw or str(names)
        )
    if said.calls:
        return _tool_call(said.calls[0], said)
    return _structured(said)


def problem(text: str, raw: str) -> dict[str, JsonValue]:
    # ``type`` is deliberately not a decision tag: validation fails and the step records it.
    return {"type": MALFORMED, "problem": text, "raw": raw}


def _tool_call(call: Called, said: Said) -> dict[str, JsonValue]:
    cut = " (the reply was cut off at max_tokens)" if said.cut_off else ""
    raw_arguments = call.arguments if call.arguments not in (None, "") else "{}"
    try:
        arguments = json.loads(raw_arguments) if isinstance(raw_arguments, str) else raw_arguments
    except ValueError:
        return problem(f"tool call {call.name} has arguments that are not JSON{cut}", said.raw)
    if not isinstance(arguments, dict):
        return problem(f"tool call {call.name} arguments are not an object", said.raw)
    if call.name in said.decision_tools:
        return {**arguments, "type": call.name}
    if call.name == CALL_TOOL:  # a model that called the decision by its JSON name
        return {**arguments, "type": CALL_TOOL}
    return {
        "type": CALL_TOOL,
        "proposal": {"tool": call.name, "arguments": arguments},
        "rationale": said.text.strip(),
    }


def _structured(said: Said) -> dict[str, JsonValue]:
    stripped = said.text.strip()
    fenced = _FENCE.match(stripped)
    candidate = fenced.group(1) if fenced else stripped
    cut = " (the reply was cut off at max_tokens)" if said.cut_off else ""
    raw = said.raw or said.text
    if not candidate:
        return problem(f"the reply is empty{cut}", raw)
    try:
        value = json.loads(candidate)
    except ValueError:
        return problem(f"the reply is not JSON{cut}", raw)
    if not isinstance(value, dict):
        return problem("the reply is JSON but not an object", raw)
    return value
