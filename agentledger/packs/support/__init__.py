"""The support pack: refunds and order questions for a small web shop (seed 000's example),
built only through ``agentledger.sdk``.

Its system of record (orders, customers, refunds, messages) is its own (``records``); read tools
verify an order, a customer and the returns policy (``tools``); a refund and a message wait for
a person's approval (a refund above ``contracts.FINANCE_LIMIT`` for a finance approver's) and
run once under the runtime's idempotency key (``write_tools``); ``playbook`` is its scripted
model and ``planner`` bounds each work order's grants to the order the request names.
"""

from __future__ import annotations

from agentledger.domain.planning import GrantPlanner
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.support import records, seed, tools, webhooks, write_tools
from agentledger.packs.support.definition import pack
from agentledger.sdk import copy_tables

__all__ = ["PACK", "make_work_order", "planned_work_order"]

pack.install(records.install)
pack.seed(seed.seed)
pack.sandbox(copy_tables(records.customers, records.orders, records.payments, records.refunds,
                         records.messages))  # fmt: skip

PACK = pack.build()
"""``agentledger.packs.support:PACK``, an ``agentledger.sdk.Pack``."""

_DECLARING = (tools, write_tools, webhooks)  # imported for what they declare on ``pack``


def make_work_order(request: str, principal: Principal) -> WorkOrder:
    """Resolve the request's terms to canonical ids before the run starts (seed 003, step 2),
    then plan its grants from the request alone (``planner.RequestPlanner``)."""
    return pack.make_work_order(request, principal)


def planned_work_order(request: str, principal: Principal, planner: GrantPlanner) -> WorkOrder:
    """A work order whose grants ``planner`` proposed (any ``GrantPlanner``: a model's too)."""
    return pack.planned_work_order(request, principal, planner)
