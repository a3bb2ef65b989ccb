"""Who may read which packet items: each item carries a sensitivity (from its source: a memory's
classification, a document's), and a reader a clearance; an item above the reader's clearance is
shown by its id, kind, source, sensitivity and content hash, never its content. The packet's hash
is over the packet as the model received it, so a reader cleared to see everything can still
check every redacted item against it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from agentledger.domain.context.items import Sensitivity
from agentledger.domain.context.packet import PacketItem, Section

RANK: Mapping[Sensitivity, int] = MappingProxyType(
    {"public": 0, "internal": 1, "confidential": 2, "restricted": 3}
)


def most_sensitive(levels: Iterable[Sensitivity]) -> Sensitivity:
    """What a summary of several things is: as sensitive as the most sensitive of them."""
    return max(levels, key=RANK.__getitem__, default="public")


def cleared(sensitivity: Sensitivity, clearance: Sensitivity) -> bool:
    return RANK[sensitivity] <= RANK[clearance]


def redacted(item: PacketItem) -> PacketItem:
    return item.model_copy(update={"content": {"redacted": item.sensitivity}})


def as_cleared(section: Section, clearance: Sensitivity) -> Section:
    """The section as a reader cleared to ``clearance`` may see it."""
    items = tuple(
        item if cleared(item.sensitivity, clearance) else redacted(item) for item in section.items
    )
    return section.model_copy(update={"items": items})
