"""The memory store: governed records on SQLite or PostgreSQL, and retrieval for context.

``MemoryStore`` persists the pure lifecycle of ``domain.memory`` (propose → … → publish, correct,
revoke, expire, delete with a receipt) and retrieves, as the authenticated principal, what that
principal may see now, as ContextItems with citations and ``why_retrieved``. ``install`` creates
its tables (a separate MetaData, created at start, outside the ledger's Alembic history).
"""

from datetime import datetime

from agentledger.activities.memory._activities import MemoryActivities
from agentledger.activities.memory._erasure import forget_subject, subject_memories
from agentledger.activities.memory._retrieve import CACHE_TTL, MemoryOmission, MemoryRetrieval
from agentledger.activities.memory._store import DeletionReceipt, MemoryNotFound, MemoryStore
from agentledger.activities.memory._tables import install
from agentledger.activities.messages import ProposedMemory, ProposeMemoryInput
from agentledger.domain.memory import Admission, MemoryProposal, MemoryScope
from agentledger.domain.principal import Principal

__all__ = [
    "CACHE_TTL",
    "DeletionReceipt",
    "MemoryActivities",
    "MemoryNotFound",
    "MemoryOmission",
    "MemoryRetrieval",
    "MemoryStore",
    "ProposeMemoryInput",
    "ProposedMemory",
    "forget_subject",
    "install",
    "remember_preference",
    "subject_memories",
]


def remember_preference(
    store: MemoryStore, principal: Principal, key: str, value: str, now: datetime
) -> Admission:
    """The principal states a preference about themselves: policy approves and publishes it."""
    proposal = MemoryProposal(
        memory_id=f"pref_{principal.tenant_id}_{principal.user_id}_{key}",
        category="user_preference",
        content={key: value},
        scope=MemoryScope(tenant_id=principal.tenant_id, user_id=principal.user_id),
        writer="principal",
        source=f"principal:{principal.user_id}",
        trust="user_claim",
    )
    return store.propose(proposal, principal, now)
