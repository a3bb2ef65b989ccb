"""Readers that fill the same cache entry at the same moment both succeed (PostgreSQL used to
raise duplicate-key and deadlock errors here, each costing an activity retry)."""

from __future__ import annotations

import threading
from datetime import timedelta

from activities.memory import MemoryStore
from tests.domain.context_fixtures import CUSTOMER, NOW
from tests.memory.conftest import CURATOR, proposal

READERS, ROUNDS = 8, 15


def test_concurrent_cache_fills_of_one_key_all_succeed(store: MemoryStore) -> None:
    store.propose(proposal("mem_lang", {"language": "en"}), CUSTOMER, NOW)
    store.approve("mem_lang", CURATOR, NOW)
    errors: list[BaseException] = []
    for round_ in range(ROUNDS):
        barrier = threading.Barrier(READERS)
        now = NOW + timedelta(hours=round_)  # a fresh key each round: every reader misses

        def read(now=now, barrier=barrier, query=f"language round {round_}") -> None:  # type: ignore[no-untyped-def]
            barrier.wait()
            try:
                store.retrieve(CUSTOMER, now, query=query)
            except BaseException as exc:  # counted, not raised: the figure is the point
                errors.append(exc)

        threads = [threading.Thread(target=read) for _ in range(READERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [], f"{len(errors)} of {READERS * ROUNDS} reads failed: {errors[:2]}"
