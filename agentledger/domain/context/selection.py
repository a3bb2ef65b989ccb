"""Selection rules: who may see an item, whether it is current, and how items rank.

Every rule is explicit and deterministic (ties end on id and content hash), so candidate order
never changes a packet and no model is asked which access-controlled data it should see.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentledger.domain.context.items import KIND_TRUST, PUBLISHED, TRUST_RANK, ContextItem, Kind
from agentledger.domain.context.packet import Conflict, OmissionReason
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState

RankKey = tuple[object, ...]
_LIFECYCLE_REASON: Mapping[str, OmissionReason] = {
    "quarantined": "quarantined",
    "revoked": "revoked",
    "superseded": "superseded",
    "expired": "expired",
}


def permitted(item: ContextItem, principal: Principal) -> bool:
    """Tenant and scope check; a denied item is never counted, rendered, hashed or named."""
    if item.tenant_id is not None and item.tenant_id != principal.tenant_id:
        return False
    return item.permission_scope is None or item.permission_scope in principal.scopes


@dataclass(frozen=True)
class Relevance:
    """What this step reads, given the run's state and the caller's explicit requirements."""

    step: str
    kinds: frozenset[Kind]
    index_kinds: frozenset[Kind]
    required_ids: frozenset[str]

    def explicitly_required(self, item: ContextItem) -> bool:
        return item.id in self.required_ids or self.step in item.required_for_step

    def reason(self, item: ContextItem) -> OmissionReason | None:
        if self.explicitly_required(item):
            return None
        targeted_elsewhere = item.kind == "instruction" and bool(item.required_for_step)
        read = item.kind in self.kinds or item.kind == "operator_instruction"  # by every step
        if read and not targeted_elsewhere:
            return None
        return "indexed_only" if item.kind in self.index_kinds else "not_required_for_step"


def screen_reason(
    item: ContextItem, now: datetime, latest: Mapping[str, ContextItem]
) -> tuple[OmissionReason, str | None] | None:
    """Lifecycle, expiry, staleness and trust, in that order; ``None`` means the item may enter."""
    if item.lifecycle_state not in PUBLISHED:
        return _LIFECYCLE_REASON.get(str(item.lifecycle_state), "not_published"), None
    if item.superseded_by is not None:
        return "superseded", item.superseded_by
    if item.expires_at is not None and item.expires_at <= now:
        return "expired", None
    winner = latest.get(source_key(item)) if item.revision is not None else None
    if winner is not None and _older_revision(item, winner):
        return "superseded", winner.id
    allowed = KIND_TRUST.get(item.kind)
    if allowed is not None and item.trust_level not in allowed:
        return "untrusted_not_allowed", None
    return None


def _revision_key(revision: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order: "rev10" after "rev9", "2026-08" after "2026-07"."""
    parts = re.findall(r"\d+|\D+", revision)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def source_key(item: ContextItem) -> str:
    return f"{item.kind}\x00{item.source}"


def latest_revisions(items: Iterable[ContextItem]) -> dict[str, ContextItem]:
    """Per (kind, source), the item with the newest revision: older revisions are stale.

    Only published, non-superseded items compete, so a quarantined draft never retires the
    published revision it would replace."""
    latest: dict[str, ContextItem] = {}
    for item in items:
        if item.revision is None or item.lifecycle_state not in PUBLISHED or item.superseded_by:
            continue
        key = source_key(item)
        best = latest.get(key)
        if best is None or _newer(item, best):
            latest[key] = item
    return latest


def _older_revision(item: ContextItem, winner: ContextItem) -> bool:
    """Strictly older only: two passages of the same revision are both current."""
    assert item.revision is not None and winner.revision is not None
    return _revision_key(item.revision) < _revision_key(winner.revision)


def _newer(a: ContextItem, b: ContextItem) -> bool:
    assert a.revision is not None and b.revision is not None
    ka = (_revision_key(a.revision), a.created_at, a.id, a.content_hash)
    kb = (_revision_key(b.revision), b.created_at, b.id, b.content_hash)
    return ka > kb


def authority_key(item: ContextItem) -> RankKey:
    return (
        -TRUST_RANK[item.trust_level],
        -item.relevance,
        -item.created_at.timestamp(),
        item.id,
        item.content_hash,
    )


def freshness_key(item: ContextItem) -> RankKey:
    return (-item.created_at.timestamp(), -item.relevance, *authority_key(item))


def relevance_key(item: ContextItem) -> RankKey:
    return (-item.relevance, *authority_key(item))


def instruction_key(item: ContextItem) -> RankKey:
    """General instructions first, then step-specific ones; authors order them by id."""
    return (bool(item.required_for_step), item.id, item.content_hash)


RANKERS: Mapping[str, Callable[[ContextItem], RankKey]] = {
    "instruction": instruction_key,
    "authority": authority_key,
    "freshness": freshness_key,
    "relevance": relevance_key,
}


def diversify(ranked: Sequence[ContextItem]) -> list[ContextItem]:
    """Round-robin over sources, so one document cannot crowd out all the others."""
    seen: dict[str, int] = {}
    keyed = []
    for position, item in enumerate(ranked):
        occurrence = seen.get(item.source, 0)
        seen[item.source] = occurrence + 1
        keyed.append((occurrence, position, item))
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [item for _, _, item in keyed]


def dedupe(items: Sequence[ContextItem]) -> tuple[list[ContextItem], list[tuple[ContextItem, str]]]:
    """Keep the most authoritative copy of each content hash; also return (dropped, kept id)."""
    groups: dict[str, list[ContextItem]] = {}
    for item in items:
        groups.setdefault(item.content_hash, []).append(item)
    # Only real duplicates pay for ranking; most hashes are unique.
    best = {h: g[0] if len(g) == 1 else min(g, key=authority_key) for h, g in groups.items()}
    kept = [i for i in items if best[i.content_hash] is i]
    dropped = [(i, best[i.content_hash].id) for i in items if best[i.content_hash] is not i]
    return kept, dropped


def find_conflicts(items: Sequence[ContextItem], state: WorkingState) -> list[Conflict]:
    """Items asserting different values for the same claim key, or disagreeing with a fact."""
    by_key: dict[str, list[ContextItem]] = {}
    for item in items:
        if item.claim_key is not None:
            by_key.setdefault(item.claim_key, []).append(item)
    facts = {f.name: f.value for f in state.verified_facts.values()}
    conflicts = []
    for key in sorted(by_key):
        group = by_key[key]
        ids = tuple(sorted(i.id for i in group))
        if key in facts and any(i.content != facts[key] for i in group):
            conflicts.append(Conflict(key=key, item_ids=ids, state_fact=key))
        elif len({i.content_hash for i in group}) > 1:
            conflicts.append(Conflict(key=key, item_ids=ids))
    return conflicts
