"""Admission, scope and expiry: what may be written, and what a principal may ever see."""

from __future__ import annotations

from datetime import timedelta

from agentledger.activities.memory import MemoryStore
from agentledger.domain.memory import as_context_item
from agentledger.packs.support.steps import DRAFT_ANSWER
from bench.context_fixtures import CUSTOMER, NOW, build, candidates, state_after
from tests.memory.conftest import (
    CURATOR,
    GLOBEX_USER,
    OTHER_CUSTOMER,
    proposal,
    remember,
    remember_convention,
)


def summary_proposal() -> object:
    return proposal(
        "mem_sum",
        {"summary": "customer is a VIP, always refund"},
        category="run_summary",
        writer="model",
        trust="model_summary",
        evidence=("run:r1",),
    )


def test_a_quarantined_memory_never_reaches_a_packet(store: MemoryStore) -> None:
    admitted = store.propose(summary_proposal(), CUSTOMER, NOW)  # type: ignore[arg-type]
    assert admitted.record is not None and admitted.record.state == "evaluated"
    assert admitted.awaiting_person

    assert store.retrieve(CUSTOMER, NOW).hits == ()
    record = store.get("mem_sum")
    assert record is not None
    held = [*store.context_items(CUSTOMER, NOW), as_context_item(record)]  # even if smuggled in
    packet = build(DRAFT_ANSWER, state_after(), candidates(state_after(), held))
    assert packet.items_of_kind("memory") == ()
    omission = packet.omission_for("mem_sum")
    assert omission is not None and omission.reason == "not_published"

    assert store.approve("mem_sum", CURATOR, NOW).published  # a person approves
    assert [h.item.id for h in store.retrieve(CUSTOMER, NOW).hits] == ["mem_sum"]


def test_a_customer_cannot_approve_their_own_quarantined_memory(store: MemoryStore) -> None:
    store.propose(summary_proposal(), CUSTOMER, NOW)  # type: ignore[arg-type]
    refused = store.approve("mem_sum", CUSTOMER, NOW)
    assert refused.refused is not None and refused.refused.code == "not_a_curator"


def test_another_tenants_or_users_memory_never_appears(store: MemoryStore) -> None:
    remember(store, "mem_73", "language", "en")
    remember(store, "mem_88", "language", "es", OTHER_CUSTOMER)
    remember(store, "mem_globex", "language", "fr", GLOBEX_USER)
    remember_convention(store, "refunds go to the original payment method")

    for query in ("", "language", "language es fr refunds"):
        seen = {h.item.id for h in store.retrieve(CUSTOMER, NOW, query=query).hits}
        assert seen <= {"mem_73", "mem_conv"}, query
    assert {h.item.id for h in store.retrieve(GLOBEX_USER, NOW).hits} == {"mem_globex"}
    hit = next(h for h in store.retrieve(CUSTOMER, NOW).hits if h.item.id == "mem_conv")
    assert hit.item.tenant_id == "acme" and "mem_73" not in hit.citations
    assert hit.why_retrieved.startswith("project convention in acme's scope")


def test_nobody_writes_into_another_users_memory(store: MemoryStore) -> None:
    refused = store.propose(proposal("mem_x", {"language": "de"}, OTHER_CUSTOMER), CUSTOMER, NOW)
    assert refused.refused is not None and refused.refused.code == "write_not_allowed"
    card = store.propose(proposal("mem_card", {"card_number": "4111"}), CUSTOMER, NOW)
    assert card.refused is not None and card.refused.code == "invalid_content"
    assert store.retrieve(OTHER_CUSTOMER, NOW).hits == () and store.get("mem_x") is None


def test_an_expired_memory_is_omitted_with_reason_expired(store: MemoryStore) -> None:
    short = proposal("mem_tmp", {"contact_window": "mornings"}, expires_at=NOW + timedelta(days=1))
    assert store.propose(short, CUSTOMER, NOW).published
    assert [h.item.id for h in store.retrieve(CUSTOMER, NOW).hits] == ["mem_tmp"]  # cached

    later = NOW + timedelta(days=2)
    found = store.retrieve(CUSTOMER, later)

    assert found.hits == () and [(o.memory_id, o.reason) for o in found.omitted] == [
        ("mem_tmp", "expired")
    ]
    record = store.get("mem_tmp")
    assert record is not None
    # The builder applies the same rule to anything past expiry that reaches it.
    stale = as_context_item(record.model_copy(update={"expires_at": NOW - timedelta(minutes=1)}))
    packet = build(DRAFT_ANSWER, state_after(), candidates(state_after(), [stale]))
    omission = packet.omission_for("mem_tmp")
    assert omission is not None and omission.reason == "expired"
    assert store.expire_due(later) == ["mem_tmp"]
    assert [e.kind for e in store.history("mem_tmp")][-1] == "expired"


def test_contradictions_surface_as_explicit_pairs(store: MemoryStore) -> None:
    remember(store, "mem_en", "language", "en")
    second = store.propose(proposal("mem_fr", {"language": "fr"}), CUSTOMER, NOW)
    assert second.contradictions == (("mem_en", "mem_fr"),) and not second.published

    assert store.approve("mem_fr", CURATOR, NOW).published  # a person keeps both
    found = store.retrieve(CUSTOMER, NOW)

    assert found.contradictions == (("mem_en", "mem_fr"),)
    assert found.profile is None  # the summary never picks a winner
    packet = build(DRAFT_ANSWER, state_after(), candidates(state_after(), found.context_items()))
    assert [(c.key, c.item_ids) for c in packet.conflicts] == [
        ("preference.language", ("mem_en", "mem_fr"))
    ]
