"""Refunds are stored exactly in their currency's minor unit, on every backend."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.packs.support import PACK
from agentledger.packs.support import records as r
from agentledger.packs.support.contracts import RefundRequest
from tests.contract.support_records import CUSTOMER, add_order


def _refund(engine: Engine, order_id: str, amount: float, currency: str) -> ToolOutput:
    args = RefundRequest(order_id=order_id, amount=amount, currency=currency, reason="late")
    call = ToolCall("op_1", CUSTOMER, args, f"idem_{uuid.uuid4().hex}", datetime.now(UTC))
    return PACK.tools["create_refund"].execute(engine, call)


def _stored(engine: Engine, order_id: str) -> list[Decimal]:
    with engine.connect() as conn:
        rows = conn.execute(select(r.refunds.c.amount).where(r.refunds.c.order_id == order_id))
        return [Decimal(str(a)) for (a,) in rows]


def test_a_refund_in_euro_is_stored_and_receipted_to_the_cent(support_engine: Engine) -> None:
    engine = support_engine
    order_id = add_order(engine, "42.50", "EUR")
    out = _refund(engine, order_id, 42.50, "EUR")
    assert out.status == "succeeded" and out.output["amount"] == 42.5
    assert _stored(engine, order_id) == [Decimal("42.50")]


def test_a_refund_in_dinar_keeps_its_third_decimal(support_engine: Engine) -> None:
    engine = support_engine
    order_id = add_order(engine, "10.000", "KWD")
    assert _refund(engine, order_id, 0.125, "KWD").status == "succeeded"
    assert _stored(engine, order_id) == [Decimal("0.125")]
    over = _refund(engine, order_id, 9.876, "KWD")
    assert over.error_code == "exceeds_refundable"
    assert over.error_message == f"9.876 KWD exceeds refundable 9.875 KWD left on {order_id}"
