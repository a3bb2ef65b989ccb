"""What the packet's fixed parts cost: the instructions prefix (tools and output schema), the
working-state view and the conflicts, each charged against its pool before the sections fill."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from pydantic import JsonValue

from agentledger.domain.context.packet import Conflict, OutputSchema, ToolDefinition
from agentledger.domain.context.profiles import StepProfile
from agentledger.domain.context.render import conflicts_text, fixed_text, state_text
from agentledger.domain.context.sections import Tally
from agentledger.domain.context.state_view import compact_view, state_view
from agentledger.domain.state import WorkingState

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def visible(
    names: Sequence[str], definitions: Mapping[str, ToolDefinition]
) -> tuple[ToolDefinition, ...]:
    """Profile ∩ definitions: nothing in the candidates can add to this list."""
    return tuple(definitions[n] for n in names if n in definitions and definitions[n].name == n)


def fixed_tokens(
    step: StepProfile,
    policy_version: str,
    tools: Sequence[ToolDefinition],
    proposable: Sequence[ToolDefinition],
    schema: OutputSchema,
    tally: Tally,
) -> int:
    """The instructions prefix: what the step may call and propose, and its output schema."""
    text = fixed_text(
        step.name,
        policy_version,
        [t.model_dump(mode="json") for t in tools],
        [t.model_dump(mode="json") for t in proposable],
        schema.model_dump(mode="json"),
    )
    size = tally.counter.count(text)
    if not tally.charge("instructions", size):
        tally.problem("tools_and_output_schema", "oversize", size)
    return size


def working_view(
    step: StepProfile, state: WorkingState, now: datetime, tally: Tally, reserve: int
) -> tuple[dict[str, JsonValue], int]:
    """The state view, compacted to the latest receipts only if the pool demands it."""
    view = state_view(state, step.state_fields)
    if step.inject_current_date:
        view = {"current_date": f"{now.date().isoformat()} ({_WEEKDAYS[now.weekday()]})", **view}
    size = 0
    for keep_last in (None, 3, 0):
        shown = view if keep_last is None else compact_view(view, keep_last)
        size = tally.counter.count(state_text(shown))
        if size + reserve <= tally.remaining["working_state"]:
            tally.charge("working_state", size)
            return shown, size
    tally.problem("working_state", "oversize", size)
    return view, size


def conflict_tokens(conflicts: Sequence[Conflict], tally: Tally) -> int:
    """The conflicts surfaced to the model share the working-state pool."""
    if not conflicts:
        return 0
    size = tally.counter.count(conflicts_text([c.model_dump(mode="json") for c in conflicts]))
    if not tally.charge("working_state", size):
        tally.problem("conflicts", "oversize", size)
    return size
