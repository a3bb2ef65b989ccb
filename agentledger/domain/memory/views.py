"""How memory reaches a packet: as ContextItems with the right trust, and as a profile summary.

Retrieval decides *whether* a memory may be seen (tenant, scope, lifecycle, expiry); the context
builder then decides whether the current step needs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import get_args

from pydantic import JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.context.clearance import most_sensitive
from agentledger.domain.context.items import ContextItem, Lifecycle, TrustLevel
from agentledger.domain.memory.lifecycle import contradictions, omission_reason
from agentledger.domain.memory.records import MemoryRecord, MemoryState, MemoryTrust
from agentledger.domain.principal import Principal

ITEM_TRUST: Mapping[MemoryTrust, TrustLevel] = MappingProxyType(
    {
        # Verified when recorded, never re-verified since: a remembered fact is a past
        # observation, not a current business fact (seed 000: read those through tools).
        "verified_fact": "tool_observation",
        "user_claim": "user_claim",
        "model_summary": "model_summary",
    }
)


ITEM_LIFECYCLE: Mapping[MemoryState, Lifecycle] = MappingProxyType(
    {
        **{s: s for s in get_args(Lifecycle) if s in get_args(MemoryState)},
        # Never None: the builder reads a missing lifecycle as published. A deleted record has
        # no content left, but if one ever reached the builder it must be refused.
        "deleted": "revoked",
    }
)


class MemoryHit(Frozen):
    """One retrieved memory: the ContextItem, what it cites and why it was retrieved."""

    item: ContextItem
    why_retrieved: str
    citations: tuple[str, ...]
    score: float = 0.0


class ProfileSummary(Frozen):
    """A short summary of the principal's approved preferences, and the records it came from."""

    item: ContextItem
    derived_from: tuple[str, ...]


def as_context_item(record: MemoryRecord, relevance: float = 0.0) -> ContextItem:
    return ContextItem.make(
        id=record.memory_id,
        kind="memory",
        content=dict(record.content),
        source=record.source,
        trust_level=ITEM_TRUST[record.trust],
        created_at=record.created_at,
        expires_at=record.expires_at,
        content_hash=record.content_hash,
        sensitivity=record.sensitivity,
        tenant_id=record.scope.tenant_id,
        title=record.category.replace("_", " "),
        lifecycle_state=ITEM_LIFECYCLE[record.state],
        relevance=relevance,
        superseded_by=record.superseded_by,
        claim_key=record.claim_key,
    )


def why_retrieved(record: MemoryRecord, principal: Principal, matched: Sequence[str]) -> str:
    scope = "your" if record.scope.user_id == principal.user_id else f"{record.scope.tenant_id}'s"
    approved = f"approved by {record.approved_by}" if record.approved_by else "approved"
    reason = f"{record.category.replace('_', ' ')} in {scope} scope, {approved}"
    return f"{reason}; matched {', '.join(matched)}" if matched else reason


def hit(
    record: MemoryRecord, principal: Principal, score: float, matched: Sequence[str]
) -> MemoryHit:
    return MemoryHit(
        item=as_context_item(record, score),
        why_retrieved=why_retrieved(record, principal, matched),
        citations=(f"memory:{record.memory_id}", record.source, *record.evidence),
        score=score,
    )


def profile_summary(
    records: Sequence[MemoryRecord], principal: Principal, now: datetime
) -> ProfileSummary | None:
    """Approved, current, uncontested preferences of this principal as one short item.

    A contested preference is left out (its records go to the caller as a contradiction pair);
    the summary never picks a winner."""
    mine = [
        r
        for r in records
        if r.category == "user_preference"
        and r.scope.user_id == principal.user_id
        and omission_reason(r, principal, now) is None
    ]
    contested = {m for pair in contradictions(mine) for m in pair}
    used = sorted((r for r in mine if r.memory_id not in contested), key=lambda r: r.memory_id)
    if not used:
        return None
    content: dict[str, JsonValue] = {k: v for r in used for k, v in sorted(r.content.items())}
    expiries = [r.expires_at for r in used if r.expires_at is not None]
    item = ContextItem.make(
        id=f"profile:{principal.tenant_id}:{principal.user_id}",
        kind="memory",
        content=content,
        source="memory:profile_summary",
        trust_level="user_claim",
        created_at=max(r.created_at for r in used),
        expires_at=min(expiries) if expiries else None,
        tenant_id=principal.tenant_id,
        title="Preferences (approved memory)",
        sensitivity=most_sensitive(r.sensitivity for r in used),
        lifecycle_state="published",
        relevance=1.0,
    )
    return ProfileSummary(item=item, derived_from=tuple(r.memory_id for r in used))
