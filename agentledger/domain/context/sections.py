"""Packet sections in fixed priority order, and how each one is filled from its token pool.

Order (seed 000): instructions, working state (and what operators told the run), required
verified evidence, latest relevant tool results, recent conversation, optional memories.
Required items are placed before anything optional in their section and are never displaced by
it; if one does not fit, the step stops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from agentledger.domain.context.budget import Pool
from agentledger.domain.context.errors import MissingContext, Problem
from agentledger.domain.context.items import Category, ContextItem, Kind
from agentledger.domain.context.packet import Omission, OmissionReason, PacketItem, SectionName
from agentledger.domain.context.render import render_item, section_title
from agentledger.domain.context.selection import RANKERS, diversify
from agentledger.domain.context.tokens import TokenCounter

Order = Literal["instruction", "authority", "freshness", "relevance"]


@dataclass(frozen=True)
class SectionSpec:
    name: SectionName
    category: Category
    kinds: frozenset[Kind]
    pool: Pool
    order: Order
    diverse: bool = True
    chronological: bool = False  # shown oldest first, though filled newest first

    @property
    def always_shown(self) -> bool:
        return self.name in ("instructions", "working_state")

    @property
    def contiguous(self) -> bool:
        """Conversation drops the oldest turns first: a gap in the middle would mislead."""
        return self.pool == "conversation"


W: Pool = "working_state"  # pools shared by two sections each
E: Pool = "evidence"

SECTION_SPECS: tuple[SectionSpec, ...] = (
    SectionSpec("instructions", "instructions", frozenset({"instruction"}), "instructions",
                "instruction", diverse=False),
    SectionSpec("working_state", "working", frozenset({"user_request", "unresolved_error"}), W,
                "authority"),
    SectionSpec("operator", "working", frozenset({"operator_instruction"}), W, "freshness",
                diverse=False, chronological=True),
    SectionSpec("authoritative", "authoritative",
                frozenset({"verified_fact", "principal_profile"}), W, "authority"),
    SectionSpec("evidence", "evidence", frozenset({"policy_passage"}), E, "authority"),
    SectionSpec("tool_results", "evidence", frozenset({"tool_result"}), E, "freshness"),
    SectionSpec("conversation", "working", frozenset({"conversation_turn"}), "conversation",
                "freshness", diverse=False, chronological=True),
    SectionSpec("reference", "reference", frozenset({"memory", "record_index"}), "memory",
                "relevance"),
)  # fmt: skip

SECTION_OF_KIND: Mapping[Kind, SectionSpec] = MappingProxyType(
    {kind: spec for spec in SECTION_SPECS for kind in spec.kinds}
)


@dataclass
class Tally:
    """One build's running account: pool space left, omissions and unmet requirements."""

    counter: TokenCounter
    remaining: dict[Pool, int]
    omissions: list[Omission] = field(default_factory=list)
    problems: list[MissingContext] = field(default_factory=list)
    _tokens: dict[int, int] = field(default_factory=dict)

    def tokens(self, item: ContextItem) -> int:
        """Rendered size of an item (marker, content, close), memoised per content hash and
        marker, so a warm build does one cache lookup per item and never re-tokenises."""
        known = self._tokens.get(id(item))
        if known is None:
            key = (
                f"\x00{item.content_hash}\x00{item.id}\x00{item.kind}\x00{item.source}"
                f"\x00{item.trust_level}\x00{item.revision}"
            )
            plain = item.kind == "instruction"
            known = self.counter.count_keyed(key, lambda: render_item(item, plain))
            self._tokens[id(item)] = known
        return known

    def omit(self, item: ContextItem, reason: OmissionReason, detail: str | None = None) -> None:
        self.omissions.append(
            Omission(
                item_id=item.id,
                kind=item.kind,
                reason=reason,
                estimated_tokens=self.tokens(item),
                detail=detail,
            )
        )

    def problem(self, name: str, problem: Problem, tokens: int | None = None) -> None:
        self.problems.append(MissingContext(item=name, problem=problem, estimated_tokens=tokens))

    def charge(self, pool: Pool, tokens: int) -> bool:
        if tokens > self.remaining[pool]:
            return False
        self.remaining[pool] -= tokens
        return True


def rank(spec: SectionSpec, items: Sequence[ContextItem], required: set[str]) -> list[ContextItem]:
    ranked = sorted(items, key=RANKERS[spec.order])
    if spec.diverse:
        ranked = diversify(ranked)
    return sorted(ranked, key=lambda i: i.id not in required)  # stable: required first


def fill(
    spec: SectionSpec, items: Sequence[ContextItem], required: set[str], tally: Tally
) -> tuple[list[PacketItem], int]:
    """Take ranked items while the pool lasts; returns the packet items and tokens spent."""
    if not items and not spec.always_shown:
        return [], 0
    title = tally.counter.count(section_title(spec.name, spec.category))
    spent = title if tally.charge(spec.pool, title) else 0
    taken: list[tuple[ContextItem, int]] = []
    closed = False
    for item in rank(spec, items, required):
        must, size = item.id in required, tally.tokens(item)
        if (must or not closed) and tally.charge(spec.pool, size):
            taken.append((item, size))
            spent += size
        elif must:
            tally.problem(item.id, "oversize", size)
        else:
            tally.omit(item, "budget_section_full")
            closed = spec.contiguous
    if not taken and not spec.always_shown:
        tally.remaining[spec.pool] += spent
        return [], 0
    if spec.chronological:
        taken.sort(key=lambda pair: (pair[0].created_at, pair[0].id))
    return [to_packet_item(item, size, item.id in required) for item, size in taken], spent


def to_packet_item(item: ContextItem, tokens: int, required: bool) -> PacketItem:
    return PacketItem(
        id=item.id,
        kind=item.kind,
        category=item.category,
        source=item.source,
        trust_level=item.trust_level,
        title=item.title,
        revision=item.revision,
        content=item.content,
        content_hash=item.content_hash,
        created_at=item.created_at,
        tokens=tokens,
        required=required,
        sensitivity=item.sensitivity,
    )
