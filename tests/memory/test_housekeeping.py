"""The housekeeping schedule (``app.housekeeping``): one per task queue, made once however many
workers start, and each firing expires the memories past their ``expires_at`` through the
``Housekeeping`` workflow on the queue's workers, recorded as the memory's ``expired`` event."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from agentledger.activities.memory import MemoryStore
from agentledger.app.housekeeping import EVERY, ensure_housekeeping
from bench.context_fixtures import CUSTOMER
from tests._temporal import Harness
from tests.memory.conftest import proposal

pytestmark = pytest.mark.temporal


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_firing_expires_the_memories_past_due_and_no_other(harness: Harness) -> None:
    store = MemoryStore.of(harness.runtime.ledger)
    then = datetime.now(UTC) - timedelta(days=2)
    due = proposal("mem_due", {"contact_window": "mornings"}, expires_at=then + timedelta(days=1))
    kept = proposal("mem_kept", {"language": "en"}, expires_at=then + timedelta(days=30))
    assert store.propose(due, CUSTOMER, then).published
    assert store.propose(kept, CUSTOMER, then).published

    queue = harness.settings.task_queue
    made = await ensure_housekeeping(harness.client, queue)
    again = await ensure_housekeeping(harness.client, queue)  # a second worker's start
    assert (made.made, again.made, made.schedule_id) == (
        True, False, f"agentledger-housekeeping-{queue}",
    )  # fmt: skip
    handle = harness.client.get_schedule_handle(made.schedule_id)
    try:
        described = await handle.describe()
        assert described.schedule.spec.intervals[0].every == EVERY
        await handle.trigger()  # what the hour's firing does
        for _ in range(200):
            record = store.get("mem_due")
            if record is not None and record.state == "expired":
                break
            await asyncio.sleep(0.05)
        assert [e.kind for e in store.history("mem_due")][-1] == "expired"
        still = store.get("mem_kept")
        assert still is not None and still.state == "published"
    finally:
        await handle.delete()
