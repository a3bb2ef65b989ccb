"""The support pack's tools: contracts plus implementations against the system of record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.activities.retrieval import search_passages
from agentledger.domain.tools import (
    ResourceRef,
    ToolContract,
    VerifiedFact,
)
from agentledger.packs.support import records as r
from agentledger.packs.support.contracts import (
    GET_CUSTOMER,
    GET_ORDER,
    SEARCH_RETURNS_POLICY,
    CustomerRef,
    CustomerView,
    OrderRef,
    OrderView,
    PolicyQuery,
)


def _failed(code: str, message: str) -> ToolOutput:
    return ToolOutput(
        status="failed", output={"error": code}, error_code=code, error_message=message
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _order_row(conn: Connection, order_id: str) -> Any:
    return conn.execute(select(r.orders).where(r.orders.c.order_id == order_id)).first()


def _refunded(conn: Connection, order_id: str) -> Decimal:
    total = conn.execute(
        select(func.coalesce(func.sum(r.refunds.c.amount), 0)).where(
            r.refunds.c.order_id == order_id
        )
    ).scalar_one()
    return Decimal(str(total))


def _as_utc(value: datetime | None) -> datetime | None:
    from datetime import UTC

    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def refundable_amount(conn: Connection, order: Any) -> Decimal:
    """What is left to refund on ``order`` (a row), exactly; may be negative on corrupt data."""
    return Decimal(str(order.amount)) - _refunded(conn, order.order_id)


def order_view(conn: Connection, order_id: str) -> tuple[Any, OrderView] | None:
    row = _order_row(conn, order_id)
    if row is None:
        return None
    promised, delivered = _as_utc(row.promised_by), _as_utc(row.delivered_at)
    refundable = refundable_amount(conn, row)
    status = row.status
    if (
        status == "delivered"
        and delivered is not None
        and promised is not None
        and delivered > promised
    ):
        status = "delivered_late"
    if refundable <= 0 and status != "in_transit":
        status = "refunded"
    view = OrderView(
        order_id=row.order_id,
        status=status,
        amount=float(row.amount),
        refundable_amount=float(max(refundable, Decimal(0))),
        currency=row.currency,
        promised_by=_iso(promised) or "",
        delivered_at=_iso(delivered),
    )
    return row, view


@dataclass(frozen=True)
class GetOrder:
    contract: ToolContract = GET_ORDER

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        args = call.arguments
        assert isinstance(args, OrderRef)
        with engine.connect() as conn:
            found = order_view(conn, args.order_id)
        # Another customer's order is reported exactly like a missing one: no existence leak.
        if (
            found is None
            or found[0].customer_id != call.principal.user_id
            or found[0].tenant_id != call.principal.tenant_id
        ):
            return _failed(
                "order_not_found",
                f"no order {args.order_id} on the account of {call.principal.user_id}",
            )
        row, view = found
        values = {
            "order_status": view.status,
            "amount": view.amount,
            "refundable_amount": view.refundable_amount,
            "currency": view.currency,
        }
        facts = tuple(
            VerifiedFact(name=name, value=value, resource_id=view.order_id, observed_at=call.now)
            for name, value in values.items()
        )
        resource = ResourceRef(
            resource_id=view.order_id,
            kind="order",
            owner_user_id=row.customer_id,
            tenant_id=row.tenant_id,
        )
        return ToolOutput(
            status="succeeded",
            output=view.model_dump(mode="json"),
            receipt_id=f"order-read-{view.order_id}",
            facts=facts,
            resources=(resource,),
        )

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return None


@dataclass(frozen=True)
class GetCustomer:
    contract: ToolContract = GET_CUSTOMER

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        args = call.arguments
        assert isinstance(args, CustomerRef)
        with engine.connect() as conn:
            row = conn.execute(
                select(r.customers).where(r.customers.c.customer_id == args.customer_id)
            ).first()
        if (
            row is None
            or row.customer_id != call.principal.user_id
            or row.tenant_id != call.principal.tenant_id
        ):
            return _failed(
                "customer_not_found",
                f"no customer {args.customer_id} visible to {call.principal.user_id}",
            )
        view = CustomerView(
            customer_id=row.customer_id, name=row.name, language=row.language, tier=row.tier
        )
        return ToolOutput(
            status="succeeded",
            output=view.model_dump(),
            receipt_id=f"customer-read-{row.customer_id}",
            facts=(
                VerifiedFact(
                    name="language",
                    value=row.language,
                    resource_id=row.customer_id,
                    observed_at=call.now,
                ),
            ),
            resources=(
                ResourceRef(
                    resource_id=row.customer_id,
                    kind="customer",
                    owner_user_id=row.customer_id,
                    tenant_id=row.tenant_id,
                ),
            ),
        )

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return None


@dataclass(frozen=True)
class SearchReturnsPolicy:
    """Policy evidence from the versioned document store (tenant-filtered, only approved
    revisions in force at ``call.now``), ranked by the process's retriever
    (``AGENTLEDGER_RETRIEVAL``: full-text by default, semantic or fused with the extra)."""

    contract: ToolContract = SEARCH_RETURNS_POLICY

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        args = call.arguments
        assert isinstance(args, PolicyQuery)
        hits = search_passages(engine, args.query, call.principal.tenant_id, call.now, limit=3)
        evidence = tuple(hit.evidence() for hit in hits)
        # The full result (stored in the ledger) says why each passage was retrieved: which
        # retriever ranked it where, with what score. The model's view keeps only the passage.
        results = [
            e.model_dump(mode="json")
            | {"retrieved_by": [r.model_dump(mode="json") for r in hit.retrieved_by]}
            for e, hit in zip(evidence, hits, strict=True)
        ]
        return ToolOutput(
            status="succeeded",
            output={"results": results, "count": len(results)},
            receipt_id=f"policy-search-{call.operation_id}",
            evidence=evidence,
        )

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return None
