"""Packet items carry the sensitivity of what they came from; a reader sees an item's content
only up to their clearance, and the packet's hash does not depend on who reads it."""

from __future__ import annotations

import pytest

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import ContextPacket
from agentledger.domain.context.clearance import as_cleared, cleared, most_sensitive
from agentledger.domain.context.items import Sensitivity
from agentledger.packs.support.steps import DRAFT_ANSWER
from bench.context_fixtures import LANGUAGE_MEMORY, build, candidates, state_after

LEVELS: tuple[Sensitivity, ...] = ("public", "internal", "confidential", "restricted")


def answer_packet(memory_sensitivity: Sensitivity) -> ContextPacket:
    items = [
        item.model_copy(update={"sensitivity": memory_sensitivity})
        if item.id == LANGUAGE_MEMORY.id
        else item
        for item in candidates(state_after())
    ]
    return build(DRAFT_ANSWER, state_after(), items)


@pytest.mark.parametrize("level", LEVELS)
def test_an_item_keeps_the_sensitivity_of_its_source(level: Sensitivity) -> None:
    packet = answer_packet(level)
    assert packet.item(LANGUAGE_MEMORY.id).sensitivity == level  # type: ignore[union-attr]


def test_an_internal_item_hashes_as_packets_did_before_items_carried_a_sensitivity() -> None:
    packet = answer_packet("internal")
    body = packet.model_dump(mode="json", exclude={"packet_hash"})
    for section in body["sections"]:
        for item in section["items"]:
            del item["sensitivity"]
    assert packet.packet_hash == sha256_hex(body)
    assert answer_packet("restricted").packet_hash != packet.packet_hash  # it is covered


@pytest.mark.parametrize("clearance", LEVELS)
def test_a_reader_sees_content_only_up_to_their_clearance(clearance: Sensitivity) -> None:
    packet = answer_packet("confidential")
    shown = {i.id: i for s in packet.sections for i in as_cleared(s, clearance).items}
    memory = shown[LANGUAGE_MEMORY.id]
    if cleared("confidential", clearance):
        assert memory == packet.item(LANGUAGE_MEMORY.id)
    else:
        assert memory.content == {"redacted": "confidential"}
        assert memory.content_hash == LANGUAGE_MEMORY.content_hash  # still checkable
    for item in packet.items():
        assert (shown[item.id] == item) == cleared(item.sensitivity, clearance), item.id


def test_a_summary_is_as_sensitive_as_its_most_sensitive_part() -> None:
    assert most_sensitive(["internal", "restricted", "public"]) == "restricted"
    assert most_sensitive(["internal"]) == "internal"
    assert most_sensitive([]) == "public"
