"""Readers that fill the same cache entry at the same moment both succeed (PostgreSQL used to
raise duplicate-key and deadlock errors here, each costing an activity retry)."""

from __future__ import annotations

from datetime import timedelta

from agentledger.activities.memory import MemoryStore
from bench.context_fixtures import CUSTOMER, NOW
from tests.concurrency import at_once
from tests.memory.conftest import CURATOR, proposal

READERS, ROUNDS = 8, 15


def test_concurrent_cache_fills_of_one_key_all_succeed(store: MemoryStore) -> None:
    store.propose(proposal("mem_lang", {"language": "en"}), CUSTOMER, NOW)
    store.approve("mem_lang", CURATOR, NOW)
    errors: list[BaseException] = []
    for round_ in range(ROUNDS):
        now = NOW + timedelta(hours=round_)  # a fresh key each round: every reader misses
        query = f"language round {round_}"
        outcomes = at_once(
            [lambda: store.retrieve(CUSTOMER, now, query=query) for _ in range(READERS)]  # noqa: B023 (called before the loop moves on)
        )
        errors += [o for o in outcomes if isinstance(o, BaseException)]
    assert errors == [], f"{len(errors)} of {READERS * ROUNDS} reads failed: {errors[:2]}"
