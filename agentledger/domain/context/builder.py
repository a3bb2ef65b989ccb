"""``build_context``: a pure function from (step, principal, state, candidates, …) to a packet.

It never fetches. It filters (permission, lifecycle, expiry, staleness, trust, relevance,
duplicates), surfaces conflicts, fills section pools in fixed priority order, records why every
candidate it saw was left out, and raises ``InsufficientContext`` rather than send a packet that
lacks something the step requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from pydantic import JsonValue

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context.budget import POOLS, TokenBudget
from agentledger.domain.context.errors import InsufficientContext
from agentledger.domain.context.generated import generated_items
from agentledger.domain.context.items import ContextItem
from agentledger.domain.context.packet import (
    OUTPUT_SCHEMAS,
    Conflict,
    ContextPacket,
    Section,
    ToolDefinition,
)
from agentledger.domain.context.profiles import StepProfile
from agentledger.domain.context.render import PACKET_FORMAT, conflicts_text, fixed_text, state_text
from agentledger.domain.context.requirements import check_requirements, named_ids, required_ids_for
from agentledger.domain.context.sections import SECTION_OF_KIND, SECTION_SPECS, Tally, fill
from agentledger.domain.context.selection import (
    Relevance,
    dedupe,
    find_conflicts,
    latest_revisions,
    permitted,
    screen_reason,
)
from agentledger.domain.context.state_view import compact_view, state_view
from agentledger.domain.context.tokens import TokenCounter, default_counter
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState

_NO_TOOLS: Mapping[str, ToolDefinition] = MappingProxyType({})
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass
class Selection:
    relevant: list[ContextItem] = field(default_factory=list)
    indexed: list[ContextItem] = field(default_factory=list)


@dataclass(frozen=True)
class Compiled:
    """Everything a packet holds except the omission trace, which the tally keeps."""

    tools: tuple[ToolDefinition, ...]
    proposable: tuple[ToolDefinition, ...]
    view: dict[str, JsonValue]
    conflicts: tuple[Conflict, ...]
    sections: tuple[Section, ...]
    section_tokens: dict[str, int]


def build_context(
    step: StepProfile,
    principal: Principal,
    working_state: WorkingState,
    candidates: Sequence[ContextItem],
    policy_version: str,
    token_budget: TokenBudget,
    now: datetime,
    *,
    tool_definitions: Mapping[str, ToolDefinition] = _NO_TOOLS,
    model_settings_digest: str = "",
    counter: TokenCounter | None = None,
    required_ids: Sequence[str] = (),
) -> ContextPacket:
    """Compile the packet for one model call; see the module docstring for the rules."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    budget = token_budget.with_sections(step.section_tokens)
    tally = Tally(counter or default_counter(), {p: budget.sections[p].tokens for p in POOLS})
    allowed = [c for c in candidates if permitted(c, principal)]
    kinds = step.kinds_for(working_state)
    relevance = Relevance(step.name, kinds, frozenset(step.index_kinds), frozenset(required_ids))
    chosen = _select(allowed, relevance, now, tally)
    relevant = chosen.relevant + generated_items(step, principal, chosen.indexed, now, tally)
    tools = _visible(step.allowed_tools, tool_definitions)
    proposable = _visible(step.proposable_actions, tool_definitions)
    fixed = _fixed_tokens(step, policy_version, tools, proposable, tally)
    required_kinds = step.required_kinds_for(working_state)
    # Required items that share the working-state pool (the user's request) are reserved first:
    # a long run's state view compacts to its latest receipts rather than crowd them out.
    reserve = sum(
        tally.tokens(i)
        for i in relevant
        if i.kind in required_kinds and SECTION_OF_KIND[i.kind].pool == "working_state"
    )
    view, view_tokens = _working_view(step, working_state, now, tally, reserve)
    conflicts = find_conflicts(relevant, working_state)
    conflict_tokens = _conflict_tokens(conflicts, tally)
    named = named_ids(allowed, relevance)
    required = required_ids_for(relevant, named, required_kinds, tally.omissions)
    sections = _fill_sections(relevant, required, tally, view_tokens)
    check_requirements(sections, allowed, named, required_kinds, tally)
    if tally.problems:
        raise InsufficientContext(step.name, tuple(tally.problems))
    section_tokens: dict[str, int] = {"fixed": fixed, **{s.name: s.tokens for s in sections}}
    if conflicts:
        section_tokens["conflicts"] = conflict_tokens
    compiled = Compiled(tools, proposable, view, tuple(conflicts), tuple(sections), section_tokens)
    key = _cache_key(step, principal, compiled, policy_version, model_settings_digest)
    return _assemble(
        step, policy_version, budget, compiled, tally, len(candidates) - len(allowed), key
    )


def _assemble(
    step: StepProfile,
    policy_version: str,
    budget: TokenBudget,
    compiled: Compiled,
    tally: Tally,
    denied: int,
    cache_key: str,
) -> ContextPacket:
    omissions = sorted(
        tally.omissions,
        key=lambda o: (o.item_id, o.reason, o.kind, o.estimated_tokens, o.detail or ""),
    )
    packet = ContextPacket(
        step=step.name,
        policy_version=policy_version,
        sections=compiled.sections,
        working_state=compiled.view,
        tools=compiled.tools,
        proposable_actions=compiled.proposable,
        output_schema=OUTPUT_SCHEMAS[step.output_schema],
        omissions=tuple(omissions),
        denied_count=denied,
        conflicts=compiled.conflicts,
        section_tokens=compiled.section_tokens,
        total_tokens=sum(compiled.section_tokens.values()),
        token_limit=budget.application_limit,
        token_counter=tally.counter.name,
        included_ids=tuple(item.id for s in compiled.sections for item in s.items),
        cache_key=cache_key,
        packet_format=PACKET_FORMAT,
    )
    return packet.model_copy(update={"packet_hash": packet.compute_hash()})


def _select(
    allowed: Sequence[ContextItem], relevance: Relevance, now: datetime, tally: Tally
) -> Selection:
    latest = latest_revisions(allowed)
    chosen = Selection()
    for item in allowed:
        screened = screen_reason(item, now, latest)
        why = screened[0] if screened else relevance.reason(item)
        if why is None:
            chosen.relevant.append(item)
            continue
        tally.omit(item, why, screened[1] if screened else None)
        if why == "indexed_only":
            chosen.indexed.append(item)
    chosen.relevant, dropped = dedupe(chosen.relevant)
    for item, kept_id in dropped:
        tally.omit(item, "duplicate", kept_id)
    return chosen


def _visible(
    names: Sequence[str], definitions: Mapping[str, ToolDefinition]
) -> tuple[ToolDefinition, ...]:
    """Profile ∩ definitions: nothing in the candidates can add to this list."""
    return tuple(definitions[n] for n in names if n in definitions and definitions[n].name == n)


def _fixed_tokens(
    step: StepProfile,
    policy_version: str,
    tools: Sequence[ToolDefinition],
    proposable: Sequence[ToolDefinition],
    tally: Tally,
) -> int:
    text = fixed_text(
        step.name,
        policy_version,
        [t.model_dump(mode="json") for t in tools],
        [t.model_dump(mode="json") for t in proposable],
        OUTPUT_SCHEMAS[step.output_schema].model_dump(mode="json"),
    )
    size = tally.counter.count(text)
    if not tally.charge("instructions", size):
        tally.problem("tools_and_output_schema", "oversize", size)
    return size


def _working_view(
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


def _conflict_tokens(conflicts: Sequence[Conflict], tally: Tally) -> int:
    if not conflicts:
        return 0
    size = tally.counter.count(conflicts_text([c.model_dump(mode="json") for c in conflicts]))
    if not tally.charge("working_state", size):
        tally.problem("conflicts", "oversize", size)
    return size


def _fill_sections(
    relevant: Sequence[ContextItem], required: set[str], tally: Tally, view_tokens: int
) -> list[Section]:
    grouped: dict[str, list[ContextItem]] = {}
    for item in relevant:
        grouped.setdefault(SECTION_OF_KIND[item.kind].name, []).append(item)
    sections = []
    for spec in SECTION_SPECS:
        items, spent = fill(spec, grouped.get(spec.name, []), required, tally)
        if spec.name == "working_state":
            spent += view_tokens
        if items or spec.always_shown:
            sections.append(
                Section(name=spec.name, category=spec.category, items=tuple(items), tokens=spent)
            )
    return sections


def _cache_key(
    step: StepProfile,
    principal: Principal,
    compiled: Compiled,
    policy_version: str,
    model_settings_digest: str,
) -> str:
    """Everything in the stable prefix plus who may reuse it; never a denied item."""
    instructions = next(s for s in compiled.sections if s.name == "instructions")
    return sha256_hex(
        {
            "step": step.name,
            "output_schema": step.output_schema,
            "instructions": [[i.id, i.content_hash] for i in instructions.items],
            "tools": [t.model_dump(mode="json") for t in compiled.tools],
            "proposable": [t.model_dump(mode="json") for t in compiled.proposable],
            "policy_version": policy_version,
            "model_settings": model_settings_digest,
            "principal_scope": principal.scope_key(),
        }
    )
