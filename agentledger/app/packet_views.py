"""A stored context packet as its readers see it (the API, the UI, ``agentledger show``), written
by the functions that wrote it for the model and never re-assembled beside them.

``text`` is the whole packet as the model step renders it (``render_fixed`` and every
``packet_parts`` part: each section's items, the working-state block, the conflicts), which is
also what its token counts measure. ``messages`` are what a chat-completions provider is posted
for it (``sent_messages``, the provider's own path), for a run whose model is one; a scripted model
reads the packet's structure and has none. A diff compares these texts, blocks included.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

from agentledger.activities.ledger import Ledger
from agentledger.activities.models import sent_messages
from agentledger.domain.context.clearance import as_cleared, cleared
from agentledger.domain.context.items import Sensitivity
from agentledger.domain.context.packet import ContextPacket, Section
from agentledger.domain.context.render import Part, packet_parts, render_fixed
from agentledger.domain.model_profile import ModelProfile

PREFIX = "fixed"
"""The diff's name for the fixed prefix (step, preamble, tools, proposable actions, schema), as
the packet's ``section_tokens`` names it."""


def packet_view(
    body: dict[str, Any], model: ModelProfile | None, clearance: Sensitivity
) -> dict[str, Any]:
    """A stored packet with its exact text, less the content of items above the reader's
    ``clearance`` (``redacted`` counts them); ``model`` is the run's frozen model profile."""
    packet = ContextPacket.model_validate(body)
    shown = packet.model_copy(
        update={"sections": tuple(as_cleared(s, clearance) for s in packet.sections)}
    )
    parts, fixed = list(packet_parts(shown)), render_fixed(shown)
    return {
        "packet_hash": packet.packet_hash,
        "step": packet.step,
        "cache_key": packet.cache_key,
        "total_tokens": packet.total_tokens,
        "token_limit": packet.token_limit,
        "token_counter": packet.token_counter,
        "section_tokens": packet.section_tokens,
        "packet_format": packet.packet_format,
        "fixed_text": fixed,
        "sections": [_section(section, parts) for section in shown.sections],
        "conflicts_text": "".join(p.text for p in parts if p.block == "conflicts"),
        "text": fixed + "".join(p.text for p in parts),
        "model": None if model is None else {"provider": model.provider, "model": model.model},
        "messages": None if model is None else sent_messages(shown, model),
        "clearance": clearance,
        "redacted": sum(not cleared(item.sensitivity, clearance) for item in packet.items()),
        "omissions": [o.model_dump(mode="json") for o in packet.omissions],
        "conflicts": [c.model_dump(mode="json") for c in packet.conflicts],
        "tools": [t.name for t in packet.tools],
        "proposable_actions": [t.name for t in packet.proposable_actions],
    }


def model_of(ledger: Ledger, manifest_hash: str) -> ModelProfile | None:
    """The model profile a run's manifest froze: what its packets were rendered for."""
    manifest = ledger.get_manifest_body(manifest_hash)
    if manifest is None or "model" not in manifest:
        return None
    return ModelProfile.model_validate(manifest["model"])


def _section(section: Section, parts: list[Part]) -> dict[str, Any]:
    """The section with the text of every part it holds: its items and, for ``working_state``,
    the state block the model reads after them."""
    mine = [p for p in parts if p.section == section.name and p.block != "conflicts"]
    return {
        **section.model_dump(mode="json"),
        "text": "".join(p.text for p in mine),
        "blocks": {p.block: p.text for p in mine if p.block is not None},
    }


def packet_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What changed from packet view ``a`` to ``b``, judged on the text sent: per section the
    items and runtime blocks added, removed and changed (the fixed prefix and the conflicts
    count as sections), token deltas, omissions gained and lost, and the changed lines."""
    pieces_a, pieces_b = _pieces(a), _pieces(b)
    sections = []
    for name in sorted(set(pieces_a) | set(pieces_b)):
        was, now = pieces_a.get(name, {}), pieces_b.get(name, {})
        sections.append(
            {
                "name": name,
                "added": sorted(set(now) - set(was)),
                "removed": sorted(set(was) - set(now)),
                "changed": sorted(k for k in set(was) & set(now) if was[k] != now[k]),
                "tokens": [a["section_tokens"].get(name, 0), b["section_tokens"].get(name, 0)],
            }
        )
    omitted_a = {o["item_id"]: o["reason"] for o in a["omissions"]}
    omitted_b = {o["item_id"]: o["reason"] for o in b["omissions"]}
    return {
        "a": a["packet_hash"],
        "b": b["packet_hash"],
        "total_tokens": [a["total_tokens"], b["total_tokens"]],
        "same_cache_key": a["cache_key"] == b["cache_key"],
        "same_text": a["text"] == b["text"],
        "sections": sections,
        "omissions_added": {k: v for k, v in omitted_b.items() if k not in omitted_a},
        "omissions_removed": {k: v for k, v in omitted_a.items() if k not in omitted_b},
        "text": text_diff(a["text"], b["text"]),
    }


def text_diff(a: str, b: str) -> list[str]:
    """The changed lines of the sent text, as a unified diff with one line of context."""
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), "a", "b", n=1, lineterm="")
    return list(lines)


def _pieces(view: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per section, each item's content hash and each runtime block's text digest."""
    pieces = {
        s["name"]: {
            **{item["id"]: item["content_hash"] for item in s["items"]},
            **{block: _digest(text) for block, text in s["blocks"].items()},
        }
        for s in view["sections"]
    }
    pieces[PREFIX] = {PREFIX: _digest(view["fixed_text"])}
    if view["conflicts_text"]:
        pieces["conflicts"] = {"conflicts": _digest(view["conflicts_text"])}
    return pieces


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
