"""The support pack's scripted grant planner: it reads the customer's request, nothing else.

An order id the customer names bounds ``get_order`` and ``create_refund`` to that order (to none
when the request names none); the policy search and the customer tools stay open, governed by
the gate's other checks (scope, ownership of the resource, approval). A real model can replace it
(``GrantPlanner``) and be measured on the same runs.
"""

from __future__ import annotations

import re

from agentledger.domain.planning import PlanningInput
from agentledger.domain.workorder import ArgumentBound, WorkGrant

__all__ = ["BOUND_BY_ORDER", "ORDER_REF", "RequestPlanner"]

ORDER_REF = re.compile(r"\bord_[0-9]{1,12}\b")
BOUND_BY_ORDER = ("get_order", "create_refund")
"""Tools whose ``order_id`` the request bounds."""


class RequestPlanner:
    def plan(self, given: PlanningInput) -> tuple[WorkGrant, ...]:
        named = tuple(dict.fromkeys(ORDER_REF.findall(given.request_text)))
        bound = (ArgumentBound(argument="order_id", allowed=named),)
        return tuple(
            WorkGrant(tool=g.name, bounds=bound if g.name in BOUND_BY_ORDER else ())
            for g in given.profile.tool_grants
        )
