"""Selection rules: requirements, expiry, budgets, lifecycle, staleness, duplicates, conflicts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentledger.domain.context import ContextItem, InsufficientContext
from agentledger.domain.state import CompletedAction
from agentledger.packs.support.steps import CHOOSE_NEXT_ACTION, DRAFT_ANSWER, SUPPORT_BUDGET
from bench.context_fixtures import (
    INSTRUCTIONS,
    LANGUAGE_MEMORY,
    NOW,
    build,
    candidates,
    item,
    state_after,
    state_before,
)


def passage(item_id: str, text: str, **meta: object) -> ContextItem:
    base = {"source": f"returns#{item_id}", "trust_level": "approved_policy", "revision": "2026-08"}
    return item(item_id, "policy_passage", text, **{**base, **meta})


def test_the_step_stops_when_the_user_request_is_missing() -> None:
    with pytest.raises(InsufficientContext) as refusal:
        build(CHOOSE_NEXT_ACTION, state_before(), list(INSTRUCTIONS))
    assert refusal.value.code == "insufficient_context"
    assert refusal.value.missing == ("kind:user_request",)


def test_the_step_stops_when_required_policy_evidence_is_missing() -> None:
    state = state_after().model_copy(update={"evidence": ()})
    with pytest.raises(InsufficientContext) as refusal:
        build(DRAFT_ANSWER, state, candidates(state))
    assert refusal.value.missing == ("kind:policy_passage",)


def test_the_step_stops_when_a_named_required_item_is_absent() -> None:
    with pytest.raises(InsufficientContext) as refusal:
        build(
            CHOOSE_NEXT_ACTION,
            state_before(),
            candidates(state_before()),
            required_ids=("contract-77",),
        )
    assert refusal.value.missing == ("contract-77",)


def test_policy_evidence_is_optional_until_the_order_is_verified() -> None:
    state = state_before()
    packet = build(DRAFT_ANSWER, state, candidates(state))
    assert packet.items_of_kind("policy_passage") == ()


def test_expired_evidence_is_rejected() -> None:
    stale = passage(
        "old-window",
        "Refunds within 90 days.",
        expires_at=NOW - timedelta(days=1),
        source="returns#old",
    )
    packet = build(DRAFT_ANSWER, state_after(), [*candidates(state_after()), stale])
    omission = packet.omission_for("old-window")
    assert omission is not None and omission.reason == "expired"
    assert "Refunds within 90 days." not in packet.model_dump_json()


def test_required_expired_evidence_raises_insufficient_context_naming_it() -> None:
    state = state_after().model_copy(update={"evidence": ()})
    stale = passage("late-2026", "Late deliveries qualify.", expires_at=NOW - timedelta(hours=1))
    with pytest.raises(InsufficientContext) as refusal:
        build(DRAFT_ANSWER, state, [*candidates(state), stale])
    assert refusal.value.expired == ("late-2026",)
    assert "kind:policy_passage" in refusal.value.missing


def test_a_required_item_that_does_not_fit_stops_the_step() -> None:
    huge = passage("huge", "refund " * 6_000, required_for_step=("draft_answer",))
    with pytest.raises(InsufficientContext) as refusal:
        build(DRAFT_ANSWER, state_after(), [*candidates(state_after()), huge])
    assert refusal.value.oversize == ("huge",)


def test_optional_memory_is_removed_before_required_evidence() -> None:
    memories = [
        item(
            f"mem_{n}",
            "memory",
            f"note {n} " + "detail " * 120,
            trust_level="user_claim",
            relevance=n / 10,
        )
        for n in range(10)
    ]
    packet = build(DRAFT_ANSWER, state_after(), [*candidates(state_after(), ()), *memories])
    assert packet.items_of_kind("policy_passage")[0].required
    dropped = [o for o in packet.omissions if o.reason == "budget_section_full"]
    assert {o.item_id for o in dropped} == {"mem_0", "mem_1", "mem_2", "mem_3"}
    kept = [i.id for i in packet.items_of_kind("memory")]
    assert kept == sorted(kept, reverse=True)  # highest relevance survives
    assert packet.section_tokens["reference"] <= SUPPORT_BUDGET.sections["memory"].tokens


def test_optional_memory_never_stands_in_for_evidence_that_does_not_fit() -> None:
    state = state_after().model_copy(update={"evidence": ()})
    huge = passage("huge", "refund " * 6_000)
    with pytest.raises(InsufficientContext) as refusal:
        build(DRAFT_ANSWER, state, [*candidates(state), huge, LANGUAGE_MEMORY])
    assert refusal.value.oversize == ("huge",)


def test_the_oldest_conversation_turns_are_dropped_first_without_gaps() -> None:
    turns = [
        item(
            f"turn_{n:02d}",
            "conversation_turn",
            {"role": "user", "text": "hello " * 90},
            trust_level="user_claim",
            created_at=NOW - timedelta(minutes=60 - n),
        )
        for n in range(40)
    ]
    packet = build(DRAFT_ANSWER, state_after(), [*candidates(state_after(), ()), *turns])
    kept = [i.id for i in packet.items_of_kind("conversation_turn")]
    assert kept and kept == [f"turn_{n:02d}" for n in range(40 - len(kept), 40)]
    assert all(packet.omission_for(f"turn_{n:02d}") for n in range(40 - len(kept)))


def test_working_state_compacts_history_into_the_latest_receipts_when_full() -> None:
    actions = tuple(
        CompletedAction(
            operation_id=f"op_{n}",
            tool="get_order",
            status="succeeded",
            receipt_id=f"r_{n}",
            idempotency_key=None,
            arguments_digest="d",
            summary="",
        )
        for n in range(80)
    )
    state = state_before().model_copy(update={"completed_actions": actions})
    packet = build(CHOOSE_NEXT_ACTION, state, candidates(state))
    ws = packet.working_state
    assert ws["completed_actions_earlier_count"] == 77
    shown = ws["completed_actions"]
    assert isinstance(shown, list)
    assert [a["operation_id"] for a in shown if isinstance(a, dict)] == ["op_77", "op_78", "op_79"]


def test_duplicates_are_omitted_in_favour_of_the_more_authoritative_copy() -> None:
    claim = item(
        "dup_claim", "tool_result", "Order ord_4821 was delivered late.", trust_level="untrusted"
    )
    observed = item("dup_obs", "tool_result", "Order ord_4821 was delivered late.")
    packet = build(DRAFT_ANSWER, state_after(), [*candidates(state_after()), claim, observed])
    omission = packet.omission_for("dup_claim")
    assert omission is not None and (omission.reason, omission.detail) == ("duplicate", "dup_obs")
    assert "dup_obs" in packet.included_ids


def test_older_revisions_of_a_source_are_superseded() -> None:
    older = passage(
        "late-v1", "Late deliveries: 14 days.", source="returns#late", revision="2026-7"
    )
    newer = passage(
        "late-v2", "Late deliveries: 30 days.", source="returns#late", revision="2026-10"
    )
    packet = build(DRAFT_ANSWER, state_after(), [*candidates(state_after()), newer, older])
    omission = packet.omission_for("late-v1")
    assert omission is not None and (omission.reason, omission.detail) == ("superseded", "late-v2")
    assert "late-v2" in packet.included_ids


def test_corrected_and_revoked_memories_disappear_from_later_packets() -> None:
    first = build(DRAFT_ANSWER, state_after(), candidates(state_after()))
    assert {"language": "en"} in [i.content for i in first.items_of_kind("memory")]
    corrected = LANGUAGE_MEMORY.model_copy(update={"superseded_by": "memory_779"})
    replacement = item(
        "memory_779",
        "memory",
        {"language": "de"},
        trust_level="user_claim",
        claim_key="preference.language",
    )
    revoked = item("memory_780", "memory", {"allergy": "none"}, lifecycle_state="revoked")
    quarantined = item("memory_781", "memory", {"vip": True}, lifecycle_state="quarantined")
    later = build(
        DRAFT_ANSWER,
        state_after(),
        candidates(state_after(), (corrected, replacement, revoked, quarantined)),
    )
    assert [i.content for i in later.items_of_kind("memory")] == [{"language": "de"}]
    reasons = {o.item_id: o.reason for o in later.omissions}
    assert reasons == {
        "memory_778": "superseded",
        "memory_780": "revoked",
        "memory_781": "quarantined",
    }
    assert later.conflicts == ()


def test_conflicting_claims_are_surfaced_not_silently_resolved() -> None:
    french = item(
        "memory_790",
        "memory",
        {"language": "fr"},
        trust_level="user_claim",
        claim_key="preference.language",
    )
    wrong_status = item(
        "memory_791", "memory", "delivered", trust_level="model_summary", claim_key="order_status"
    )
    packet = build(
        DRAFT_ANSWER,
        state_after(),
        candidates(state_after(), (LANGUAGE_MEMORY, french, wrong_status)),
    )
    conflicts = {c.key: c for c in packet.conflicts}
    assert conflicts["preference.language"].item_ids == ("memory_778", "memory_790")
    assert conflicts["order_status"].state_fact == "order_status"
    assert {"memory_778", "memory_790", "memory_791"} <= set(packet.included_ids)
    assert packet.section_tokens["conflicts"] > 0


def test_records_the_step_does_not_read_are_disclosed_as_an_index() -> None:
    state = state_after()
    packet = build(CHOOSE_NEXT_ACTION, state, candidates(state))
    omission = packet.omission_for("returns-2026-08#late-delivery")
    assert omission is not None and omission.reason == "indexed_only"
    [index] = packet.items_of_kind("record_index")
    assert index.content == [
        {
            "id": "returns-2026-08#late-delivery",
            "kind": "policy_passage",
            "title": "Late delivery",
            "tokens": omission.estimated_tokens,
        }
    ]
    assert "Late deliveries qualify" not in packet.model_dump_json()


def test_instructions_for_other_steps_stay_out() -> None:
    packet = build(CHOOSE_NEXT_ACTION, state_before(), candidates(state_before()))
    assert "ins.50.claims" not in packet.included_ids
    assert packet.omission_for("ins.50.claims") is not None


def test_every_candidate_is_either_included_or_explained() -> None:
    state = state_after()
    items = candidates(state, (LANGUAGE_MEMORY,))
    packet = build(CHOOSE_NEXT_ACTION, state, items)
    explained = set(packet.included_ids) | {o.item_id for o in packet.omissions}
    assert {i.id for i in items} <= explained


def test_a_required_item_replaced_by_a_newer_revision_passes_the_duty_on() -> None:
    older = passage(
        "terms-v1", "Terms v1.", source="terms", revision="1", required_for_step=("draft_answer",)
    )
    newer = passage("terms-v2", "Terms v2.", source="terms", revision="2")
    packet = build(DRAFT_ANSWER, state_after(), [*candidates(state_after()), older, newer])
    promoted = packet.item("terms-v2")
    assert promoted is not None and promoted.required


def test_a_named_item_that_expired_is_named_in_the_refusal() -> None:
    note = item(
        "handover-note", "memory", "Call back at 5pm.", expires_at=NOW - timedelta(minutes=1)
    )
    with pytest.raises(InsufficientContext) as refusal:
        build(
            DRAFT_ANSWER,
            state_after(),
            [*candidates(state_after()), note],
            required_ids=("handover-note",),
        )
    assert refusal.value.expired == ("handover-note",)
