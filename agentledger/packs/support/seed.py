"""Sample data for the support pack's system of record and directory."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine

from agentledger.activities.retrieval import ensure_documents
from agentledger.domain.principal import Principal
from agentledger.packs.support import records as r
from agentledger.packs.support.policies import POLICY_DIR

TENANT = "acme"
CUSTOMER_SCOPES = frozenset({"orders:read", "policies:read", "refunds:request", "messages:send"})

PRINCIPALS = (
    Principal(
        user_id="usr_73",
        tenant_id=TENANT,
        roles=frozenset({"customer"}),
        scopes=CUSTOMER_SCOPES,
        display_name="Dana Weber",
    ),
    Principal(
        user_id="usr_88",
        tenant_id=TENANT,
        roles=frozenset({"customer"}),
        scopes=CUSTOMER_SCOPES,
        display_name="Tomás Ruiz",
    ),
    Principal(
        user_id="ops_lead_1",
        tenant_id=TENANT,
        roles=frozenset(
            {"approver", "policy_approver", "support_agent", "canceller", "steerer", "forker"}
        ),
        display_name="Priya Natarajan",
    ),
    Principal(
        user_id="fin_lead_1",
        tenant_id=TENANT,
        roles=frozenset({"approver", "finance_approver"}),
        display_name="Jonas Berg",
    ),
    Principal(
        user_id="agent_2",
        tenant_id=TENANT,
        roles=frozenset({"support_agent"}),
        display_name="Sam Okafor",
    ),
    Principal(
        user_id="dpo_1",
        tenant_id=TENANT,
        roles=frozenset({"eraser"}),
        display_name="Data protection officer",
    ),
    Principal(
        user_id="ops_globex",
        tenant_id="globex",
        roles=frozenset({"approver", "policy_approver"}),
        display_name="Globex approver",
    ),
)
DEMO_APPROVER = "ops_lead_1"


def _t(day: int, month: int = 8, hour: int = 12) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


_CUSTOMERS = [
    {
        "customer_id": "usr_73",
        "name": "Dana Weber",
        "email": "dana@example.com",
        "language": "en",
        "tier": "gold",
    },
    {
        "customer_id": "usr_88",
        "name": "Tomás Ruiz",
        "email": "tomas@example.com",
        "language": "es",
        "tier": "standard",
    },
]

# (order, customer, status, amount, currency, ordered, promised, delivered, items)
_ORDERS = [
    ("ord_4821", "usr_73", "delivered", "42.50", "EUR", _t(10), _t(14), _t(20), "Desk lamp"),
    ("ord_4822", "usr_73", "delivered", "19.99", "EUR", _t(1), _t(5), _t(4), "Notebook set"),
    (
        "ord_4823",
        "usr_73",
        "in_transit",
        "75.00",
        "EUR",
        _t(20, 11),
        _t(25, 11),
        None,
        "Headphones",
    ),
    ("ord_4900", "usr_73", "delivered", "480.00", "EUR", _t(3), _t(7), _t(15), "Standing desk"),
    ("ord_5100", "usr_88", "delivered", "120.00", "EUR", _t(2), _t(6), _t(12), "Office chair"),
    ("ord_5101", "usr_88", "cancelled", "35.00", "USD", _t(3), _t(7), None, "Cable kit"),
]


def seed(engine: Engine) -> bool:
    """Insert the sample records once. Returns False when the data was already there.

    The shipped policies go into the versioned document store on every call (a no-op when
    unchanged), so a pack upgrade that edits a policy lands as a new, searchable revision.
    """
    r.install(engine)
    ensure_documents(engine, POLICY_DIR)
    with engine.begin() as conn:
        if conn.execute(select(func.count()).select_from(r.customers)).scalar_one() > 0:
            return False
        conn.execute(insert(r.customers), [{**c, "tenant_id": TENANT} for c in _CUSTOMERS])
        conn.execute(insert(r.orders), _order_rows())
        conn.execute(insert(r.payments), _payment_rows())
    return True


def _order_rows() -> list[dict[str, object]]:
    return [
        {
            "order_id": o,
            "tenant_id": TENANT,
            "customer_id": c,
            "status": s,
            "amount": Decimal(a),
            "currency": cur,
            "ordered_at": od,
            "promised_by": pb,
            "delivered_at": dl,
            "items": items,
        }
        for o, c, s, a, cur, od, pb, dl, items in _ORDERS
    ]


def _payment_rows() -> list[dict[str, object]]:
    """One captured card payment per order, of its amount."""
    return [
        {
            "payment_id": "pay_" + o.removeprefix("ord_"),
            "order_id": o,
            "amount": Decimal(a),
            "currency": cur,
            "method": "card",
            "captured_at": od,
        }
        for o, _c, _s, a, cur, od, _pb, _dl, _i in _ORDERS
    ]
