"""``build_context``: a pure function from (step, principal, state, candidates, …) to a packet.

It never fetches. It filters (permission, lifecycle, expiry, staleness, trust, relevance,
duplicates), surfaces conflicts, fills section pools in fixed priority order, records why every
candidate it saw was left out, and raises ``InsufficientContext`` rather than send a packet that
lacks something the step requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

from pydantic import JsonValue

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context.budget import POOLS, TokenBudget
from agentledger.domain.context.charges import conflict_tokens, fixed_tokens, visible, working_view
from agentledger.domain.context.errors import InsufficientContext
from agentledger.domain.context.generated import generated_items
from agentledger.domain.context.items import ContextItem, Kind
from agentledger.domain.context.packet import (
    OUTPUT_SCHEMAS,
    Conflict,
    ContextPacket,
    OutputSchema,
    Section,
    ToolDefinition,
)
from agentledger.domain.context.profiles import StepProfile
from agentledger.domain.context.render import PACKET_FORMAT
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
from agentledger.domain.context.tokens import TokenCounter, default_counter
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState

_NO_TOOLS: Mapping[str, ToolDefinition] = MappingProxyType({})


@dataclass(frozen=True)
class Selection:
    """The select stage's result: what the principal may see and what the step will read."""

    allowed: list[ContextItem]
    relevant: list[ContextItem]
    named: set[str]
    required_kinds: frozenset[Kind]
    required: set[str]


@dataclass(frozen=True)
class Compiled:
    """Everything a packet holds except the omission trace, which the tally keeps."""

    tools: tuple[ToolDefinition, ...]
    proposable: tuple[ToolDefinition, ...]
    view: dict[str, JsonValue]
    conflicts: tuple[Conflict, ...]
    sections: tuple[Section, ...]
    section_tokens: dict[str, int]
    output_schema: OutputSchema


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
    output_schema: OutputSchema | None = None,
) -> ContextPacket:
    """Compile the packet for one model call; see the module docstring for the rules.
    ``output_schema``: the step's decision schema (default: its profile's fixed one)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    budget = token_budget.with_sections(step.section_tokens)
    tally = Tally(counter or default_counter(), {p: budget.sections[p].tokens for p in POOLS})
    selection = _select(step, principal, working_state, candidates, required_ids, now, tally)
    schema = output_schema or OUTPUT_SCHEMAS[step.output_schema]
    compiled = _fill(
        step, working_state, selection, (policy_version, schema), tool_definitions, now, tally
    )
    _check(step, selection, compiled, tally)
    key = _cache_key(step, principal, compiled, policy_version, model_settings_digest)
    denied = len(candidates) - len(selection.allowed)
    return _assemble(step, policy_version, budget, compiled, tally, denied, key)


def _select(
    step: StepProfile,
    principal: Principal,
    state: WorkingState,
    candidates: Sequence[ContextItem],
    required_ids: Sequence[str],
    now: datetime,
    tally: Tally,
) -> Selection:
    """Permission first, then screening and relevance (generated items join the relevant), and
    which of the relevant items the packet must include."""
    allowed = [c for c in candidates if permitted(c, principal)]
    kinds = step.kinds_for(state)
    relevance = Relevance(step.name, kinds, frozenset(step.index_kinds), frozenset(required_ids))
    relevant, indexed = _screen(allowed, relevance, now, tally)
    relevant += generated_items(step, principal, indexed, now, tally)
    named = named_ids(allowed, relevance)
    required_kinds = step.required_kinds_for(state)
    required = required_ids_for(relevant, named, required_kinds, tally.omissions)
    return Selection(allowed, relevant, named, required_kinds, required)


def _fill(
    step: StepProfile,
    state: WorkingState,
    selection: Selection,
    prefix: tuple[str, OutputSchema],
    tool_definitions: Mapping[str, ToolDefinition],
    now: datetime,
    tally: Tally,
) -> Compiled:
    """Charge the fixed prefix (under ``prefix``: the policy version and the output schema),
    the state view and the conflicts, then fill the sections."""
    policy_version, schema = prefix
    tools = visible(step.allowed_tools, tool_definitions)
    proposable = visible(step.proposable_actions, tool_definitions)
    fixed = fixed_tokens(step, policy_version, tools, proposable, schema, tally)
    view, view_tokens = working_view(step, state, now, tally, _reserve(selection, tally))
    conflicts = find_conflicts(selection.relevant, state)
    conflict_size = conflict_tokens(conflicts, tally)
    sections = _fill_sections(selection.relevant, selection.required, tally, view_tokens)
    section_tokens: dict[str, int] = {"fixed": fixed, **{s.name: s.tokens for s in sections}}
    if conflicts:
        section_tokens["conflicts"] = conflict_size
    return Compiled(
        tools, proposable, view, tuple(conflicts), tuple(sections), section_tokens, schema
    )


def _reserve(selection: Selection, tally: Tally) -> int:
    """Required items that share the working-state pool (the user's request) are reserved first:
    a long run's state view compacts to its latest receipts rather than crowd them out."""
    return sum(
        tally.tokens(i)
        for i in selection.relevant
        if i.kind in selection.required_kinds and SECTION_OF_KIND[i.kind].pool == "working_state"
    )


def _check(step: StepProfile, selection: Selection, compiled: Compiled, tally: Tally) -> None:
    """Raise rather than send a packet that lacks something the step requires."""
    check_requirements(
        compiled.sections, selection.allowed, selection.named, selection.required_kinds, tally
    )
    if tally.problems:
        raise InsufficientContext(step.name, tuple(tally.problems))


def _graph_schema(step: StepProfile, schema: OutputSchema) -> dict[str, str]:
    """A step graph's decision schema joins the cache key; the fixed ones are named by it."""
    if schema == OUTPUT_SCHEMAS[step.output_schema]:
        return {}
    return {"decision_schema": sha256_hex(schema.json_schema)}


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
        output_schema=compiled.output_schema,
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


def _screen(
    allowed: Sequence[ContextItem], relevance: Relevance, now: datetime, tally: Tally
) -> tuple[list[ContextItem], list[ContextItem]]:
    """The relevant items (deduplicated) and the indexed-only ones; the rest are omitted."""
    latest = latest_revisions(allowed)
    relevant, indexed = list[ContextItem](), list[ContextItem]()
    for item in allowed:
        screened = screen_reason(item, now, latest)
        why = screened[0] if screened else relevance.reason(item)
        if why is None:
            relevant.append(item)
            continue
        tally.omit(item, why, screened[1] if screened else None)
        if why == "indexed_only":
            indexed.append(item)
    relevant, dropped = dedupe(relevant)
    for item, kept_id in dropped:
        tally.omit(item, "duplicate", kept_id)
    return relevant, indexed


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
            **_graph_schema(step, compiled.output_schema),
            "instructions": [[i.id, i.content_hash] for i in instructions.items],
            "tools": [t.model_dump(mode="json") for t in compiled.tools],
            "proposable": [t.model_dump(mode="json") for t in compiled.proposable],
            "policy_version": policy_version,
            "model_settings": model_settings_digest,
            "principal_scope": principal.scope_key(),
        }
    )
