"""Properties over generated candidate sets: determinism and budgets."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger.domain.context import (
    POOLS,
    ContextItem,
    ContextPacket,
    InsufficientContext,
    render_packet,
)
from agentledger.domain.context.sections import SECTION_OF_KIND
from agentledger.packs.support.steps import DRAFT_ANSWER, SUPPORT_BUDGET
from bench.context_fixtures import COUNTER, NOW, build, candidates, item, state_after

WORDS = ["refund", "order", "late", "policy", "customer", "the", "within", "days", "42.50", "EUR"]
KINDS = [
    "tool_result",
    "memory",
    "conversation_turn",
    "policy_passage",
    "verified_fact",
    "record_index",
    "instruction",
]
TRUST = ["untrusted", "user_claim", "tool_observation", "approved_policy", "verified_fact"]


@st.composite
def candidate(draw: st.DrawFn, n: int) -> ContextItem:
    kind = draw(st.sampled_from(KINDS))
    meta: dict[str, Any] = {
        "trust_level": draw(st.sampled_from(TRUST)),
        "source": f"src{draw(st.integers(0, 5))}",
        "created_at": NOW - timedelta(minutes=draw(st.integers(0, 10_000))),
        "relevance": draw(st.floats(0, 1)),
        "tenant_id": draw(st.sampled_from([None, "acme", "globex"])),
        "permission_scope": draw(st.sampled_from([None, "orders:read", "finance:read"])),
        "lifecycle_state": draw(st.sampled_from([None, "published", "revoked", "quarantined"])),
        "revision": draw(st.sampled_from([None, "1", "2", "10"])),
        "claim_key": draw(st.sampled_from([None, "preference.language", "order_status"])),
    }
    if draw(st.booleans()):
        meta["expires_at"] = NOW + timedelta(hours=draw(st.integers(-48, 48)))
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=400))
    return item(f"c{n}", kind, " ".join(words), **meta)


@st.composite
def candidate_sets(draw: st.DrawFn) -> list[ContextItem]:
    size = draw(st.integers(0, 30))
    return [draw(candidate(n)) for n in range(size)]


def packet_or_refusal(items: list[ContextItem]) -> ContextPacket | str:
    try:
        return build(DRAFT_ANSWER, state_after(), [*candidates(state_after()), *items])
    except InsufficientContext as refusal:
        return str(refusal)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(candidate_sets(), st.randoms(use_true_random=False))
def test_the_same_inputs_give_the_same_packet_hash(
    items: list[ContextItem], rng: random.Random
) -> None:
    first = packet_or_refusal(items)
    shuffled = list(items)
    rng.shuffle(shuffled)
    again = packet_or_refusal(shuffled)
    assert first == again
    if isinstance(first, ContextPacket):
        assert isinstance(again, ContextPacket)
        assert first.packet_hash == again.packet_hash == first.compute_hash()


@SETTINGS
@given(candidate_sets())
def test_token_estimates_stay_within_budget(items: list[ContextItem]) -> None:
    packet = packet_or_refusal(items)
    if not isinstance(packet, ContextPacket):
        return
    assert packet.total_tokens <= SUPPORT_BUDGET.usable
    assert COUNTER.count(render_packet(packet)) <= SUPPORT_BUDGET.application_limit
    spent = dict.fromkeys(POOLS, 0)
    spent["instructions"] += packet.section_tokens["fixed"]
    spent["working_state"] += packet.section_tokens.get("conflicts", 0)
    for section in packet.sections:
        pool = next(s.pool for s in SECTION_OF_KIND.values() if s.name == section.name)
        spent[pool] += section.tokens
        assert section.tokens >= sum(i.tokens for i in section.items)
    for pool in POOLS:
        assert spent[pool] <= SUPPORT_BUDGET.sections[pool].tokens


@SETTINGS
@given(candidate_sets())
def test_every_permitted_candidate_is_included_or_explained_exactly_once(
    items: list[ContextItem],
) -> None:
    packet = packet_or_refusal(items)
    if not isinstance(packet, ContextPacket):
        return
    explained = [o.item_id for o in packet.omissions] + [
        i for i in packet.included_ids if not i.startswith(("principal:", "index:"))
    ]
    permitted = [
        i
        for i in items
        if i.tenant_id in (None, "acme") and i.permission_scope in (None, "orders:read")
    ]
    assert len(explained) == len(permitted) + len(candidates(state_after()))
    assert packet.denied_count == len(items) - len(permitted)
