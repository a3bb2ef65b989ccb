"""Which packet format each checked-in history was recorded with, and how the current builder's
packet is written back in an older format so its recorded hash can still be rebuilt exactly.

A format change re-renders only the runtime's own blocks, never what is selected or how an item
is written, so an older format is a fixed rewrite of those blocks' token counts. Everything
else in the rebuilt packet (items, omissions, the fixed prefix, the cache key) must still match
the recorded hash bit for bit, which is what keeps these histories a real check.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from agentledger.domain.canonical import canonical_json
from agentledger.domain.context import ContextPacket
from agentledger.domain.context.render import PACKET_FORMAT, conflicts_text, state_text
from agentledger.domain.context.tokens import TokenCounter

# Recorded before packet formats were versioned (format 1: the working state and conflicts as
# bare JSON after their labels). A history not listed is in the current format; when
# PACKET_FORMAT moves on, list the histories recorded under the old one here with it.
RECORDED_FORMAT: Mapping[str, int] = MappingProxyType(
    dict.fromkeys(
        (
            "refund_approved",
            "refund_approved_v2",
            "refund_approved_v3",
            "refund_rejected",
            "refund_rejected_v2",
            "refund_rejected_v3",
            *(f"loop_continue_as_new_{i}" for i in range(4)),
        ),
        1,
    )
)


def recorded_format(history: str) -> int:
    return RECORDED_FORMAT.get(history, PACKET_FORMAT)


def v1_body(content: object) -> str:
    """Format 1's neutralisation, which let upper-case markers through (kept only to rebuild)."""
    text = content if isinstance(content, str) else canonical_json(content).decode()
    return text.replace("<data", "<\u200bdata").replace("</data", "<\u200b/data")


def _v1_tokens(packet: ContextPacket, counter: TokenCounter) -> dict[str, int]:
    tokens = dict(packet.section_tokens)
    view = packet.working_state
    tokens["working_state"] += counter.count(f"WORKING_STATE {v1_body(view)}\n")
    tokens["working_state"] -= counter.count(state_text(view))
    if packet.conflicts:
        listed = [c.model_dump(mode="json") for c in packet.conflicts]
        v1 = f"\nCONFLICTS (unresolved; do not pick silently) {v1_body(listed)}\n"
        tokens["conflicts"] += counter.count(v1) - counter.count(conflicts_text(listed))
    return tokens


def in_format(packet: ContextPacket, version: int, counter: TokenCounter) -> ContextPacket:
    """``packet`` as the builder of format ``version`` would have written it."""
    if version == packet.packet_format:
        return packet
    if version != 1 or packet.packet_format != 2:
        raise AssertionError(f"no rewrite from packet format {packet.packet_format} to {version}")
    tokens = _v1_tokens(packet, counter)
    sections = tuple(
        s.model_copy(update={"tokens": tokens[s.name]}) if s.name == "working_state" else s
        for s in packet.sections
    )
    older = packet.model_copy(
        update={
            "sections": sections,
            "section_tokens": tokens,
            "total_tokens": sum(tokens.values()),
            "packet_format": 1,
        }
    )
    return older.model_copy(update={"packet_hash": older.compute_hash()})
