"""The reference pack, tested as any pack author tests theirs (``agentledger.sdk.testing``): its
tools keep their promises against its own system of record, and its model decides from the
packet alone."""

from __future__ import annotations

import pytest
from pydantic import JsonValue, ValidationError
from sqlalchemy.engine import Engine

from agentledger.packs.support import PACK
from agentledger.packs.support.seed import PRINCIPALS
from agentledger.sdk.testing import decide, memory_system, packet, reconcile_tool, run_tool

DANA, TOMAS = PRINCIPALS[0], PRINCIPALS[1]
REFUND: dict[str, JsonValue] = {"order_id": "ord_4821", "currency": "EUR", "reason": "late"}
ORDER: dict[str, JsonValue] = {"order_id": "ord_4821"}


def refund(amount: float) -> dict[str, JsonValue]:
    return {**REFUND, "amount": amount}


@pytest.fixture
def engine() -> Engine:
    return memory_system(PACK)


def test_the_pack_is_declared_with_the_sdk_and_not_the_runtime_ports() -> None:
    from pathlib import Path

    import agentledger.packs.support as support

    sources = {p.name: p.read_text() for p in Path(support.__file__).parent.glob("*.py")}
    assert not [name for name, text in sources.items() if "agentledger.activities.ports" in text]
    assert "from agentledger.sdk import" in sources["tools.py"]
    assert type(PACK.tools["create_refund"]).__name__ == "SdkTool"


def test_reading_an_order_verifies_its_facts_and_owner(engine: Engine) -> None:
    read = run_tool(PACK, "get_order", engine, ORDER, principal=DANA)
    assert read.status == "succeeded" and read.receipt_id == "order-read-ord_4821"
    facts = {f.name: f.value for f in read.facts}
    assert facts == {
        "order_status": "delivered_late",
        "amount": 42.5,
        "refundable_amount": 42.5,
        "currency": "EUR",
    }
    assert [(r.kind, r.owner_user_id) for r in read.resources] == [("order", "usr_73")]
    theirs = run_tool(PACK, "get_order", engine, ORDER, principal=TOMAS)
    assert (theirs.status, theirs.error_code) == ("failed", "order_not_found")


def test_arguments_the_contract_refuses_never_reach_the_tool(engine: Engine) -> None:
    with pytest.raises(ValidationError):
        run_tool(PACK, "get_order", engine, {"order_id": "4821"}, principal=DANA)
    with pytest.raises(ValidationError):  # 0.001 EUR is refused, not rounded
        run_tool(PACK, "create_refund", engine, refund(0.001), principal=DANA, key="k")


def test_a_refund_runs_once_per_key_and_is_reconciled_from_the_record(engine: Engine) -> None:
    unknown = reconcile_tool(PACK, "create_refund", engine, refund(40.0), principal=DANA, key="k1")
    assert unknown is None
    first = run_tool(PACK, "create_refund", engine, refund(40.0), principal=DANA, key="k1")
    again = run_tool(PACK, "create_refund", engine, refund(40.0), principal=DANA, key="k1")
    assert first.status == again.status == "succeeded"
    receipt = {"refund_id": "rf_k1", "order_id": "ord_4821", "amount": 40.0, "currency": "EUR"}
    assert first.output == again.output == receipt
    found = reconcile_tool(PACK, "create_refund", engine, refund(40.0), principal=DANA, key="k1")
    assert found is not None and found.receipt_id == first.receipt_id
    more = run_tool(PACK, "create_refund", engine, refund(5.0), principal=DANA, key="k2")
    assert (more.status, more.error_code) == ("failed", "exceeds_refundable")
    assert more.error_message == "5.00 EUR exceeds refundable 2.50 EUR left on ord_4821"


def test_a_write_without_the_runtimes_key_does_not_run(engine: Engine) -> None:
    unkeyed = run_tool(PACK, "create_refund", engine, refund(1.0), principal=DANA)
    assert (unkeyed.status, unkeyed.error_code) == ("failed", "missing_idempotency_key")


def test_the_playbook_verifies_the_order_before_anything_else() -> None:
    named: dict[str, JsonValue] = {"references": ORDER}
    seen = packet(PACK, "choose_next_action", ["Refund ord_4821?"], named)
    assert seen.packet_hash == seen.compute_hash()
    assert seen.tool_names() == ("get_order", "get_customer", "search_returns_policy")
    decision = decide(PACK, seen)
    assert decision["type"] == "call_tool"
    assert decision["proposal"] == {"tool": "get_order", "arguments": {"order_id": "ord_4821"}}
    verified: dict[str, JsonValue] = {
        **named,
        "verified_facts": {"ord_4821.order_status": {"value": "delivered_late"}},
    }
    searched = decide(PACK, packet(PACK, "choose_next_action", ["Refund ord_4821?"], verified))
    assert searched["proposal"] == {
        "tool": "search_returns_policy",
        "arguments": {"query": "late delivery refund eligibility"},
    }
