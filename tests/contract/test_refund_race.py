"""Two runs refunding the same order at the same moment pay it once, on every backend.

Each run has its own idempotency key, so the key cannot help: the refundable amount is a
cross-run invariant and the system of record must serialise the read-check-insert on the order.
The trials start both calls together from a barrier; nothing here asserts on timing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.packs.support import PACK
from agentledger.packs.support import records as r
from agentledger.packs.support.contracts import RefundRequest
from tests.concurrency import at_once
from tests.contract.support_records import CUSTOMER, add_order

TRIALS = 30
ORDER_AMOUNT = Decimal("42.50")


def _call(order_id: str) -> ToolCall:
    """One run's approved refund of the whole order, under that run's own key."""
    return ToolCall(
        operation_id=f"op_{uuid.uuid4().hex[:12]}",
        principal=CUSTOMER,
        arguments=RefundRequest(
            order_id=order_id, amount=float(ORDER_AMOUNT), currency="EUR", reason="arrived late"
        ),
        idempotency_key=f"idem_{uuid.uuid4().hex}",
        now=datetime.now(UTC),
    )


def _race(engine: Engine, order_id: str) -> list[ToolOutput | BaseException]:
    calls = [_call(order_id), _call(order_id)]
    return at_once([lambda c=c: PACK.tools["create_refund"].execute(engine, c) for c in calls])


def _refunds(engine: Engine, order_id: str) -> tuple[int, Decimal]:
    with engine.connect() as conn:
        count, total = conn.execute(
            select(func.count(), func.coalesce(func.sum(r.refunds.c.amount), 0)).where(
                r.refunds.c.order_id == order_id
            )
        ).one()
    return count, Decimal(str(total))


def test_two_runs_refunding_one_order_at_once_pay_it_exactly_once(support_engine: Engine) -> None:
    engine = support_engine
    doubled, problems = 0, []
    for trial in range(TRIALS):
        order_id = add_order(engine, str(ORDER_AMOUNT), "EUR", f"ord_{9000 + trial}")
        outcomes = _race(engine, order_id)
        count, total = _refunds(engine, order_id)
        doubled += count > 1
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            problems.append(f"trial {trial}: raised {errors[0]!r}")
            continue
        statuses = sorted(o.status for o in outcomes if isinstance(o, ToolOutput))
        if count != 1 or total != ORDER_AMOUNT or statuses != ["failed", "succeeded"]:
            problems.append(f"trial {trial}: {count} refunds, {total} EUR, {statuses}")
            continue
        refused = next(o for o in outcomes if isinstance(o, ToolOutput) and o.status == "failed")
        assert refused.error_code == "exceeds_refundable"
        assert refused.error_message is not None
        assert "42.50 EUR exceeds refundable 0.00 EUR left on" in refused.error_message
    assert (doubled, problems) == (0, []), f"{doubled} of {TRIALS} trials double-refunded"
