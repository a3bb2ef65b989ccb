"""The billing tools against their system of record (SQLite and PostgreSQL): what each reads and
verifies, what the writes change, idempotency on the runtime's key, reconcile, and refusals."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pydantic import JsonValue
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from agentledger.packs.billing import PACK
from agentledger.packs.billing import records as r
from agentledger.packs.billing.seed import PRINCIPALS
from agentledger.sdk import ToolCall, ToolOutput
from tests.billing.conftest import SEEDED_AT

ANA, BEN, LEAD = PRINCIPALS
NOW = SEEDED_AT + timedelta(hours=9)


def run(
    engine: Engine,
    tool: str,
    arguments: dict[str, JsonValue],
    *,
    who: Any = ANA,
    key: str | None = None,
    now: datetime = NOW,
    reconcile: bool = False,
) -> ToolOutput | None:
    implementation = PACK.tools[tool]
    call = ToolCall(
        operation_id="op_1",
        principal=who,
        arguments=implementation.contract.input_model.model_validate(arguments),
        idempotency_key=key,
        now=now,
    )
    if reconcile:
        return implementation.reconcile(engine, call)
    return implementation.execute(engine, call)


def ok(output: ToolOutput | None) -> ToolOutput:
    assert output is not None and output.status == "succeeded", output
    return output


def facts(output: ToolOutput) -> dict[str, JsonValue]:
    return {f"{f.resource_id}.{f.name}": f.value for f in output.facts}


def count(engine: Engine, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_customer_lists_only_their_own_subscriptions(billing_engine: Engine) -> None:
    ana = ok(run(billing_engine, "list_subscriptions", {}))
    assert [s["subscription_id"] for s in ana.output["subscriptions"]] == ["sub_1001", "sub_1002"]
    assert facts(ana)["sub_1002.plan"] == "Family plan"
    assert {(x.resource_id, x.owner_user_id) for x in ana.resources} == {
        ("sub_1001", "cust_ana"),
        ("sub_1002", "cust_ana"),
    }
    ben = ok(run(billing_engine, "list_subscriptions", {}, who=BEN))
    assert ben.output["count"] == 1


def test_a_subscription_reads_with_the_prorated_credit_due_now(billing_engine: Engine) -> None:
    out = ok(run(billing_engine, "get_subscription", {"subscription_id": "sub_1001"}))
    # 30.00 EUR for 30 days; 10 days and 9 hours in, 19 whole days are left unused
    assert out.output["credit_available"] == "19.00"
    assert facts(out)["sub_1001.credit_available"] == 19.0
    assert facts(out)["sub_1001.currency"] == "EUR"
    later = ok(
        run(
            billing_engine,
            "get_subscription",
            {"subscription_id": "sub_1001"},
            now=NOW + timedelta(days=5),
        )
    )
    assert later.output["credit_available"] == "14.00"


def test_another_customers_subscription_reads_as_missing(billing_engine: Engine) -> None:
    for tool in ("get_subscription", "list_invoices"):
        out = run(billing_engine, tool, {"subscription_id": "sub_1001"}, who=BEN)
        assert out is not None and out.status == "failed"
        assert out.error_code == "subscription_not_found"


def test_invoices_list_newest_first_with_facts(billing_engine: Engine) -> None:
    out = ok(run(billing_engine, "list_invoices", {"subscription_id": "sub_2001"}, who=BEN))
    assert [i["invoice_id"] for i in out.output["invoices"]] == ["inv_200102", "inv_200101"]
    assert facts(out)["sub_2001.invoice_count"] == 2
    assert facts(out)["sub_2001.open_balance"] == 0.0


def test_a_credit_is_issued_once_per_key_and_reconciled_by_it(billing_engine: Engine) -> None:
    args: dict[str, JsonValue] = {
        "subscription_id": "sub_1001",
        "amount": 19.0,
        "currency": "EUR",
        "reason": "unused days",
    }
    assert run(billing_engine, "issue_prorated_credit", args, key="idem_c1", reconcile=True) is None
    first = ok(run(billing_engine, "issue_prorated_credit", args, key="idem_c1"))
    again = ok(run(billing_engine, "issue_prorated_credit", args, key="idem_c1"))
    found = ok(run(billing_engine, "issue_prorated_credit", args, key="idem_c1", reconcile=True))
    assert first.receipt_id == again.receipt_id == found.receipt_id == "cr_c1"
    assert first.output["amount"] == "19.00" and count(billing_engine, r.credits) == 1
    assert facts(first)["sub_1001.credit_available"] == 0.0
    other = run(billing_engine, "issue_prorated_credit", {**args, "amount": 0.01}, key="idem_c2")
    assert other is not None and other.error_code == "exceeds_credit_available"
    read = ok(run(billing_engine, "get_subscription", {"subscription_id": "sub_1001"}))
    assert read.output["credit_available"] == "0.00"


def test_the_record_refuses_a_credit_it_does_not_owe(billing_engine: Engine) -> None:
    base: dict[str, JsonValue] = {
        "subscription_id": "sub_1002",
        "amount": 5.0,
        "currency": "EUR",
        "reason": "unused days",
    }
    refusals = {
        "currency_mismatch": ({"currency": "USD"}, ANA),
        "inexact_amount": ({"amount": 5.001}, ANA),
        "exceeds_credit_available": ({"amount": 11.41}, ANA),  # 18.00 x 19/30 = 11.40
        "subscription_not_found": ({}, BEN),
    }
    for code, (change, who) in refusals.items():
        out = run(billing_engine, "issue_prorated_credit", {**base, **change}, who=who, key="k")
        assert out is not None and out.error_code == code
    assert count(billing_engine, r.credits) == 0
    assert ok(run(billing_engine, "issue_prorated_credit", {**base, "amount": 11.4}, key="k"))


def test_cancel_is_idempotent_and_a_second_key_finds_it_cancelled(billing_engine: Engine) -> None:
    args: dict[str, JsonValue] = {"subscription_id": "sub_1002", "reason": "moving abroad"}
    first = ok(run(billing_engine, "cancel_subscription", args, key="idem_x1"))
    again = ok(run(billing_engine, "cancel_subscription", args, key="idem_x1"))
    assert first.receipt_id == again.receipt_id == "chg_x1"
    assert first.output["service_until"] == "2026-10-01"
    assert facts(first)["sub_1002.status"] == "cancelled"
    second = run(billing_engine, "cancel_subscription", args, key="idem_x2")
    assert second is not None and second.error_code == "already_cancelled"
    assert count(billing_engine, r.changes) == 1
    status = ok(run(billing_engine, "get_subscription", {"subscription_id": "sub_1002"}))
    assert status.output["status"] == "cancelled"
    assert run(billing_engine, "cancel_subscription", args, key="idem_x9", reconcile=True) is None


def test_pause_resumes_months_after_the_paid_period(billing_engine: Engine) -> None:
    args: dict[str, JsonValue] = {"subscription_id": "sub_2001", "months": 2}
    paused = ok(run(billing_engine, "pause_subscription", args, who=BEN, key="idem_p1"))
    assert paused.output["resumes_on"] == "2026-12-01"
    found = ok(
        run(billing_engine, "pause_subscription", args, who=BEN, key="idem_p1", reconcile=True)
    )
    assert found.receipt_id == paused.receipt_id
    again = run(billing_engine, "pause_subscription", args, who=BEN, key="idem_p2")
    assert again is not None and again.error_code == "not_active"


def test_seeded_amounts_are_exact_decimals(billing_engine: Engine) -> None:
    with billing_engine.connect() as conn:
        prices = conn.execute(select(r.subscriptions.c.monthly_price)).scalars().all()
    assert sorted(Decimal(str(p)) for p in prices) == [
        Decimal("9.00"),
        Decimal("18.00"),
        Decimal("30.00"),
    ]
    assert LEAD.has_role("approver") and LEAD.has_role("billing_lead")
