"""Packet format 1: how packets stored before formats were versioned were written (until
cd21268). The builder writes only ``render.PACKET_FORMAT``; this is kept so that a packet a
ledger holds in format 1 is still shown exactly as its model was sent it.

Format 1 wrote the working state and the conflict list as bare JSON after their labels, and
neutralised only lower-case ``<data``/``</data`` (with a zero-width space)."""

from __future__ import annotations

from agentledger.domain.canonical import canonical_json
from agentledger.domain.context.packet import PacketItem, Section

FORMAT = 1


def body(content: object) -> str:
    text = content if isinstance(content, str) else canonical_json(content).decode()
    return text.replace("<data", "<\u200bdata").replace("</data", "<\u200b/data")


def _attr(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")


def render_item(item: PacketItem, plain: bool) -> str:
    if plain:
        return "- " + body(item.content) + "\n"
    rev = f' revision="{_attr(item.revision)}"' if item.revision else ""
    return (
        f'<data id="{_attr(item.id)}" kind="{item.kind}" source="{_attr(item.source)}" '
        f'trust="{item.trust_level}"{rev}>\n' + body(item.content) + "\n</data>\n"
    )


def render_section(section: Section) -> str:
    plain = section.name == "instructions"
    items = "".join(render_item(item, plain) for item in section.items)
    return f"\n## {section.name.upper()} [{section.category}]\n" + items


def state_text(view: object) -> str:
    return f"WORKING_STATE {body(view)}\n"


def conflicts_text(conflicts: object) -> str:
    return f"\nCONFLICTS (unresolved; do not pick silently) {body(conflicts)}\n"
