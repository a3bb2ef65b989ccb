"""Memory in the refund flow: the preference reaches the answer step only; the outcome is kept."""

from __future__ import annotations

from agentledger.activities.memory import MemoryStore
from agentledger.domain.events import ContextPacketBuilt, MemoryProposed
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, approve_pending

PROFILE = "profile:acme:usr_73"


async def test_the_run_sees_the_preference_when_answering_and_remembers_its_outcome(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    await approve_pending(harness, run_id)
    events = await harness.finish(run_id)

    built = [e for e in events if isinstance(e, ContextPacketBuilt)]
    assert all(PROFILE not in e.included_ids for e in built if e.step == "choose_next_action")
    assert any(PROFILE in e.included_ids for e in built if e.step == "draft_answer")
    (proposed,) = [e for e in events if isinstance(e, MemoryProposed)]
    record = MemoryStore.of(harness.runtime.ledger).get(proposed.memory_id)
    assert record is not None and record.state == "published"
    assert record.category == "prior_outcome" and record.evidence[0].startswith("receipt:")
