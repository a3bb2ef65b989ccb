"""Seed 000's two refund packets, rebuilt from realistic inputs."""

from __future__ import annotations

from agentledger.domain.context import ContextPacket, cited_ids_present, render_packet
from agentledger.packs.support.steps import CHOOSE_NEXT_ACTION, DRAFT_ANSWER
from bench.context_fixtures import (
    COUNTER,
    LANGUAGE_MEMORY,
    PASSAGE,
    REQUEST,
    build,
    candidates,
    state_after,
    state_before,
)


def first_packet() -> ContextPacket:
    return build(CHOOSE_NEXT_ACTION, state_before(), candidates(state_before()))


def answer_packet() -> ContextPacket:
    return build(DRAFT_ANSWER, state_after(), candidates(state_after()))


def texts(packet: ContextPacket, kind: str) -> list[object]:
    return [i.content for i in packet.items() if i.kind == kind]


def test_the_first_packet_holds_the_rules_request_state_tools_and_limits() -> None:
    packet = first_packet()
    assert texts(packet, "instruction") == [
        "Task: resolve a refund request.",
        "Verify the order before discussing eligibility.",
        "Do not create a refund without approval.",
    ]
    assert texts(packet, "user_request") == [{"text": REQUEST, "user_id": "usr_73"}]
    ws = packet.working_state
    assert ws["references"] == {"order_id": "ord_4821"}
    assert ws["completed_actions"] == [] and ws["pending_approvals"] == []
    assert ws["remaining_budget"] == {
        "tool_calls_remaining": 4,
        "tokens_remaining": 60_000,
        "steps_remaining": 12,
    }
    assert packet.tool_names() == ("get_order", "get_customer", "search_returns_policy")
    assert packet.proposable_actions == ()
    assert packet.output_schema.name == "next_action"


def test_the_first_packet_omits_the_language_preference_and_old_conversation() -> None:
    packet = first_packet()
    for item_id in (LANGUAGE_MEMORY.id, "turn_1", "turn_2", "ins.40.cite"):
        omission = packet.omission_for(item_id)
        assert omission is not None and omission.reason == "not_required_for_step"
        assert omission.estimated_tokens > 0
    assert LANGUAGE_MEMORY.id not in packet.included_ids


def test_the_answer_packet_holds_facts_evidence_conversation_and_preferences() -> None:
    packet = answer_packet()
    facts = packet.working_state["verified_facts"]
    assert facts == {
        "ord_4821.currency": {"value": "EUR", "observed_at": "2026-08-24T14:00:00Z"},
        "ord_4821.order_status": {"value": "delivered_late", "observed_at": "2026-08-24T14:00:00Z"},
        "ord_4821.refundable_amount": {"value": 42.5, "observed_at": "2026-08-24T14:00:00Z"},
    }
    actions = packet.working_state["completed_actions"]
    assert isinstance(actions, list)
    assert {
        "tool": "get_order",
        "operation_id": "op_104",
        "status": "succeeded",
        "receipt_id": "order-read-884",
    } in actions
    [evidence] = packet.items_of_kind("policy_passage")
    assert (evidence.id, evidence.trust_level, evidence.content) == (
        "returns-2026-08#late-delivery",
        "approved_policy",
        PASSAGE,
    )
    assert [t.content for t in packet.items_of_kind("conversation_turn")][-1] == {
        "role": "user",
        "text": REQUEST,
    }
    assert texts(packet, "memory") == [{"language": "en"}]
    assert "Answer with citations to the evidence ids." in texts(packet, "instruction")


def test_the_answer_packet_may_propose_but_not_call_a_refund() -> None:
    packet = answer_packet()
    assert packet.tools == ()
    assert [t.name for t in packet.proposable_actions] == ["create_refund", "send_customer_message"]
    properties = packet.output_schema.json_schema["properties"]
    assert packet.output_schema.name == "answer" and isinstance(properties, dict)
    assert {"answer", "supporting_source_ids", "proposed_next_action"} <= set(properties)


def test_the_answer_packet_injects_the_date_and_who_is_asking() -> None:
    packet = answer_packet()
    assert packet.working_state["current_date"] == "2026-08-24 (Monday)"
    [profile] = packet.items_of_kind("principal_profile")
    assert profile.content == {
        "user_id": "usr_73",
        "display_name": "Dana",
        "tenant_id": "acme",
        "roles": ["customer"],
    }


def test_the_answer_packet_keeps_the_five_categories_apart_in_priority_order() -> None:
    packet = answer_packet()
    assert [(s.name, s.category) for s in packet.sections] == [
        ("instructions", "instructions"),
        ("working_state", "working"),
        ("authoritative", "authoritative"),
        ("evidence", "evidence"),
        ("conversation", "working"),
        ("reference", "reference"),
    ]
    assert packet.omissions == ()


def test_cited_source_ids_are_checked_against_what_the_model_saw() -> None:
    packet = answer_packet()
    cited = ["returns-2026-08#late-delivery", "returns-2019#anything", "memory_778"]
    assert cited_ids_present(packet, cited) == ("returns-2019#anything",)
    assert cited_ids_present(first_packet(), ["returns-2026-08#late-delivery"]) == (
        "returns-2026-08#late-delivery",
    )


def test_the_rendered_packet_fits_the_estimate() -> None:
    for packet in (first_packet(), answer_packet()):
        rendered = COUNTER.count(render_packet(packet))
        assert rendered <= packet.total_tokens <= packet.token_limit
        assert packet.total_tokens == sum(packet.section_tokens.values())


def test_the_packet_hash_covers_the_whole_packet_and_round_trips_through_json() -> None:
    packet = answer_packet()
    assert packet.packet_hash == packet.compute_hash()
    again = ContextPacket.model_validate_json(packet.model_dump_json())
    assert again == packet and again.compute_hash() == packet.packet_hash
