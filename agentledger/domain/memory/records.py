"""Memory records and the facts their lifecycle produces.

A memory is a typed record that may help a later run (seed 003): never a business fact, never an
instruction. Every field the lifecycle needs to decide who may write, read, correct or forget it
is explicit, so no decision depends on reading the content.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.context.items import Sensitivity

MemoryCategory = Literal[
    "user_preference",
    "project_convention",
    "prior_outcome",
    "routing_choice",
    "run_summary",
]
MemoryTrust = Literal["verified_fact", "user_claim", "model_summary"]
MemoryState = Literal[
    "quarantined",
    "classified",
    "evaluated",
    "approved",
    "published",
    "superseded",
    "revoked",
    "expired",
    "deleted",
]
WriterKind = Literal["principal", "run", "model", "curator"]
EventKind = Literal[
    "observed",
    "quarantined",
    "classified",
    "evaluated",
    "approved",
    "published",
    "corrected",
    "superseded",
    "expired",
    "revoked",
    "deleted",
    "purged",
]
TERMINAL: frozenset[MemoryState] = frozenset({"superseded", "revoked", "expired", "deleted"})


class MemoryScope(Frozen):
    """Whose memory this is: one user in one tenant, or (``user_id=None``) the whole tenant."""

    tenant_id: str
    user_id: str | None = None


class MemoryProposal(Frozen):
    """What a writer asks to remember. Nothing is stored until ``observe`` quarantines it."""

    memory_id: str
    category: MemoryCategory
    content: dict[str, JsonValue]
    scope: MemoryScope
    writer: WriterKind
    source: str
    trust: MemoryTrust
    evidence: tuple[str, ...] = ()
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    sensitivity: Sensitivity = "internal"
    expires_at: AwareDatetime | None = None
    supersedes: str | None = None


class MemoryRecord(Frozen):
    """A stored memory. ``claim_key`` names what it asserts, so contradictions can be paired."""

    memory_id: str
    category: MemoryCategory
    content: dict[str, JsonValue]
    content_hash: str
    claim_key: str | None
    scope: MemoryScope
    writer: WriterKind
    source: str
    trust: MemoryTrust
    evidence: tuple[str, ...]
    confidence: float
    sensitivity: Sensitivity
    owner: str
    created_at: AwareDatetime
    expires_at: AwareDatetime | None
    state: MemoryState
    approved_by: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None


class MemoryEvent(Frozen):
    """One lifecycle fact about one memory: who did what, when, and why."""

    memory_id: str
    kind: EventKind
    at: AwareDatetime
    actor: str
    detail: dict[str, JsonValue] = Field(default_factory=dict)


class Refused(Frozen):
    """An expected outcome, not an exception: the transition was not allowed, and why."""

    memory_id: str
    code: str
    detail: str


class Transition(Frozen):
    """The record after a lifecycle step, and the events that step produced."""

    record: MemoryRecord
    events: tuple[MemoryEvent, ...]


class Evaluation(Frozen):
    """The evaluate step's verdict: may policy approve, and what the record contradicts."""

    transition: Transition
    policy_may_approve: bool
    contradictions: tuple[tuple[str, str], ...] = ()
    reasons: tuple[str, ...] = ()
