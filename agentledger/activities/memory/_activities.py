"""The memory activities: persist a run's outbox, then admit its proposals; and housekeeping's
expiry of memories past their ``expires_at`` (``workflows.housekeeping``, on a schedule).

The workflow authors ``MemoryProposed`` (with a deterministic memory id); this activity turns it
into a proposal in the run principal's own scope and admits it through the lifecycle. Retrying
is safe: the ledger append and the admission are both idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from temporalio import activity

from agentledger.activities._final import erased_is_final
from agentledger.activities.ledger import Ledger
from agentledger.activities.memory._store import MemoryStore
from agentledger.activities.messages import (
    HousekeepingDone,
    HousekeepingInput,
    ProposedMemory,
    ProposeMemoryInput,
)
from agentledger.activities.surface import HousekeepingSteps, MemorySteps
from agentledger.domain.events import MemoryProposed
from agentledger.domain.memory import Refused, proposal_from_event
from agentledger.domain.principal import Principal


class MemoryActivities(MemorySteps, HousekeepingSteps):
    def __init__(self, ledger: Ledger, store: MemoryStore) -> None:
        self._ledger = ledger
        self._store = store

    def all(self) -> list[Callable[..., object]]:
        return [self.propose_memory, self.expire_memories]

    @activity.defn(name="expire_memories")
    def expire_memories(self, params: HousekeepingInput) -> HousekeepingDone:
        return HousekeepingDone(expired_memories=tuple(self._store.expire_due(params.now)))

    @activity.defn(name="propose_memory")
    def propose_memory(self, params: ProposeMemoryInput) -> list[ProposedMemory]:
        with erased_is_final():  # the memories are sealed under the subject's key too
            self._ledger.append(params.outbox)
            return [
                self._admit(event, params.principal, params.now)
                for event in params.outbox
                if isinstance(event, MemoryProposed)
            ]

    def _admit(self, event: MemoryProposed, principal: Principal, now: datetime) -> ProposedMemory:
        proposal = proposal_from_event(event, principal)
        if isinstance(proposal, Refused):
            return ProposedMemory(memory_id=event.memory_id, state="refused", refused=proposal.code)
        admission = self._store.propose(proposal, principal, now)
        return ProposedMemory(
            memory_id=event.memory_id,
            state=admission.record.state if admission.record else "refused",
            refused=admission.refused.code if admission.refused else None,
            awaiting_person=admission.awaiting_person,
        )
