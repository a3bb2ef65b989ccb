"""Items the builder writes itself: who is asking, and an index of records it did not load."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from pydantic import JsonValue

from agentledger.domain.context.items import TRUST_RANK, ContextItem
from agentledger.domain.context.profiles import StepProfile
from agentledger.domain.context.sections import Tally
from agentledger.domain.principal import Principal


def generated_items(
    step: StepProfile,
    principal: Principal,
    indexed: Sequence[ContextItem],
    now: datetime,
    tally: Tally,
) -> list[ContextItem]:
    """Items the builder writes itself: the principal summary and an index of unloaded records."""
    made = []
    if step.inject_principal_profile:
        made.append(principal_item(principal, now))
    if indexed:
        made.append(index_item(step.name, indexed, now, tally))
    return made


def principal_item(principal: Principal, now: datetime) -> ContextItem:
    summary: dict[str, JsonValue] = {
        "user_id": principal.user_id,
        "display_name": principal.display_name,
        "tenant_id": principal.tenant_id,
        "roles": [*sorted(principal.roles)],
    }
    return ContextItem.make(
        id=f"principal:{principal.user_id}",
        kind="principal_profile",
        content=summary,
        source="directory",
        trust_level="verified_fact",
        created_at=now,
        tenant_id=principal.tenant_id,
        title="Who is asking",
    )


def index_item(
    step: str, indexed: Sequence[ContextItem], now: datetime, tally: Tally
) -> ContextItem:
    """Progressive disclosure: ids, titles and sizes stand in for records the step skips.

    Titles are content too, so the index carries the lowest trust among the records it lists.
    """
    entries: list[JsonValue] = [
        {"id": i.id, "kind": i.kind, "title": i.title, "tokens": tally.tokens(i)}
        for i in sorted(indexed, key=lambda i: (i.id, i.content_hash))
    ]
    weakest = min((i.trust_level for i in indexed), key=lambda t: TRUST_RANK[t])
    return ContextItem.make(
        id=f"index:{step}",
        kind="record_index",
        content=entries,
        source="context_builder",
        trust_level=weakest,
        created_at=now,
        relevance=math.inf,
        title="Available records, not loaded",
    )
