"""Memories about a customer over a sealed ledger (``activities/memory/_sealing.py``), on both
backends: stored and cached only as envelopes under the customer's key, indexed as digests that
differ per customer, still found by their words (stemmed), and opened by nothing once an erasure
destroyed the key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from agentledger.activities.ledger import ContentErased, Ledger, Sealer, erasure
from agentledger.activities.memory import MemoryStore, install
from agentledger.activities.memory._sealing import MemorySeal
from agentledger.activities.memory._tables import cache, records, summaries
from bench.context_fixtures import CUSTOMER, NOW
from tests.contract._ring import RING
from tests.memory.conftest import OTHER_CUSTOMER, remember, remember_convention

WORDS = ("lisbon", "warehouse", "refunds")


@pytest.fixture
def sealed(database_url: str) -> Iterator[tuple[Ledger, MemoryStore]]:
    with Ledger.open(database_url) as ledger:
        ledger.seal_with(Sealer(RING))
        install(ledger.engine)
        yield ledger, MemoryStore.of(ledger)


def _stored(ledger: Ledger) -> dict[str, tuple[str, Any]]:
    query = select(records.c.memory_id, records.c.content_text, records.c.record)
    with ledger.engine.connect() as conn:
        return {m: (text, record) for m, text, record in conn.execute(query)}


def test_a_customers_memory_is_stored_sealed_and_found_by_its_words(
    sealed: tuple[Ledger, MemoryStore],
) -> None:
    ledger, store = sealed
    remember(store, "mem_73", "delivery", "Lisbon warehouse refunds")
    remember(store, "mem_88", "delivery", "Lisbon warehouse refunds", OTHER_CUSTOMER)
    remember_convention(
        store, "refunds from the lisbon warehouse go to the original payment method"
    )

    stored = _stored(ledger)
    for memory_id in ("mem_73", "mem_88"):
        text, record = stored[memory_id]
        assert isinstance(record, str) and record.startswith('{"sealed":"sk_')
        assert not any(w in f"{text} {record}".lower() for w in WORDS), memory_id
        assert all(token.startswith("m") and len(token) == 21 for token in text.split())
    assert set(stored["mem_73"][0].split()).isdisjoint(stored["mem_88"][0].split())
    assert "lisbon" in stored["mem_conv"][0]  # tenant-wide: in clear

    for query in ("lisbon", "refund", "warehouses"):  # stemmed as the words were
        seen = {h.item.id for h in store.retrieve(CUSTOMER, NOW, query=query).hits}
        assert seen == {"mem_73", "mem_conv"}, query
        seen = {h.item.id for h in store.retrieve(OTHER_CUSTOMER, NOW, query=query).hits}
        assert seen == {"mem_88", "mem_conv"}, query
    hit = next(
        h for h in store.retrieve(CUSTOMER, NOW, query="lisbon").hits if h.item.id == "mem_73"
    )
    assert hit.item.content["delivery"] == "Lisbon warehouse refunds"

    with ledger.engine.connect() as conn:
        derived = [*conn.execute(select(cache.c.payload)).scalars()]
        derived += [*conn.execute(select(summaries.c.payload)).scalars()]
    assert derived and all(isinstance(p, str) and p.startswith('{"sealed":') for p in derived)
    assert not any("lisbon" in p.lower() for p in derived)


def test_once_erased_a_copy_of_a_customers_memory_opens_nowhere(
    sealed: tuple[Ledger, MemoryStore],
) -> None:
    ledger, store = sealed
    remember(store, "mem_73", "delivery", "Lisbon warehouse refunds")
    remember(store, "mem_88", "delivery", "Lisbon warehouse refunds", OTHER_CUSTOMER)
    copied = _stored(ledger)["mem_73"][1]  # an old row version, a backup

    begun = erasure.begin(ledger, CUSTOMER.tenant_id, CUSTOMER.user_id)
    done = erasure.finish(ledger, begun, by="dpo_1", reason="art. 17 request", verified={})

    assert done.affected["memories"] == 1 and "mem_73" not in _stored(ledger)
    seal = MemorySeal(ledger.sealer)
    with ledger.engine.connect() as conn, pytest.raises(ContentErased):
        seal.opened(conn, [copied])
    assert {h.item.id for h in store.retrieve(OTHER_CUSTOMER, NOW, query="lisbon").hits} == {
        "mem_88"
    }
    assert store.retrieve(CUSTOMER, NOW, query="lisbon", use_cache=False).hits == ()

    remember(store, "mem_73b", "delivery", "Porto")  # a customer again: a new key of theirs
    assert store.retrieve(CUSTOMER, NOW, query="porto").hits[0].item.id == "mem_73b"
