"""``PacketView`` looks completed actions up by the resource they were about, so a script never
mistakes one card's receipt for another's."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from agentledger.sdk import ContextPacket, PacketView, answer


def view(*actions: dict[str, JsonValue]) -> PacketView:
    state: dict[str, JsonValue] = {"completed_actions": list(actions)}
    return PacketView(ContextPacket.model_construct(step="respond", working_state=state))


def action(op: str, card: str | None, status: str = "succeeded") -> dict[str, JsonValue]:
    done: dict[str, JsonValue] = {"tool": "extend_card", "operation_id": op, "status": status}
    return done if card is None else {**done, "resource_id": card}


def test_a_lookup_by_resource_finds_only_actions_about_that_resource() -> None:
    v = view(action("op_1", "gc_1001"), action("op_2", "gc_1002", "failed"))
    assert [a["operation_id"] for a in v.completed("extend_card", card_id="gc_1002")] == ["op_2"]
    assert v.succeeded("extend_card", card_id="gc_1002") is None
    assert v.succeeded("extend_card", card_id="gc_1003") is None
    assert len(v.completed("extend_card")) == 2  # by tool alone: every card's


def test_the_latest_succeeded_action_about_the_resource_is_returned() -> None:
    v = view(action("op_1", "gc_1001"), action("op_2", "gc_1001"))
    found = v.succeeded("extend_card", card_id="gc_1001")
    assert found is not None and found["operation_id"] == "op_2"


def test_an_unknown_resource_matches_nothing_not_everything() -> None:
    v = view(action("op_1", "gc_1001"), action("op_2", None))
    assert v.completed("extend_card", card_id=None) == []
    assert v.succeeded("extend_card", card_id=None) is None


def test_a_lookup_by_two_resource_arguments_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="one resource argument"):
        view().completed("extend_card", card_id="gc_1001", months=6)


def test_confirming_an_action_claims_its_operation_tool_and_resource() -> None:
    done = view(action("op_1", "gc_1001")).succeeded("extend_card", card_id="gc_1001")
    assert done is not None
    said = answer("Card gc_1001 is extended.", confirms=[done])
    assert said["claims"] == [
        {"operation_id": "op_1", "tool": "extend_card", "resource_id": "gc_1001"}
    ]
    assert "claimed_operation_ids" not in said
