"""When a human must approve a call, and which role that human must hold.

A contract's rule is frozen into each attempt's manifest with the rest of its terms, so the role
an approval asks for is the one the attempt froze, whatever the pack's code says later.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import JsonValue, SerializerFunctionWrapHandler, model_serializer, model_validator

from agentledger.domain._model import Frozen
from agentledger.domain.principal import APPROVER_ROLE

__all__ = ["ApprovalRule", "RoleAbove"]


class RoleAbove(Frozen):
    """Above ``above`` (the rule's amount argument), only holders of ``role`` may approve."""

    role: str
    above: float


class ApprovalRule(Frozen):
    """When a human must approve: ``always``, ``never``, or above an amount argument; and who.

    ``role``: the role an approver must hold; ``roles_above``: a stricter role above an amount
    (a refund over 250 EUR needs ``finance_approver``), the highest threshold crossed deciding.
    ``widen_role``: an approver may edit a call to ask for less (a smaller amount); an edit that
    asks for more (a larger amount, another resource) is refused unless this role is named and
    the approver holds it.
    """

    kind: Literal["always", "never", "above_amount"] = "never"
    amount_argument: str | None = None
    threshold: float = 0.0
    role: str = APPROVER_ROLE
    roles_above: tuple[RoleAbove, ...] = ()
    widen_role: str | None = None

    @model_validator(mode="after")
    def _tiers_need_an_amount(self) -> ApprovalRule:
        if self.roles_above and self.amount_argument is None:
            raise ValueError("roles_above needs the amount_argument they compare")
        return self

    @model_serializer(mode="wrap")
    def _without_defaults_added_later(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Rules frozen before roles were keep their manifest hashes."""
        data = handler(self)
        if isinstance(data, dict):
            if data.get("role") == APPROVER_ROLE:
                data.pop("role")
            if not data.get("roles_above"):
                data.pop("roles_above", None)
            if data.get("widen_role") is None:
                data.pop("widen_role", None)
        return data

    def requires_approval(self, arguments: dict[str, JsonValue]) -> bool:
        if self.kind == "always":
            return True
        if self.kind == "never" or self.amount_argument is None:
            return False
        amount = self._amount(arguments)
        return amount is not None and amount > self.threshold

    def approver_role(self, arguments: dict[str, JsonValue]) -> str:
        """The role whoever approves these arguments must hold."""
        amount = self._amount(arguments)
        crossed = [t for t in self.roles_above if amount is not None and amount > t.above]
        return max(crossed, key=lambda t: t.above).role if crossed else self.role

    def _amount(self, arguments: dict[str, JsonValue]) -> float | None:
        value = arguments.get(self.amount_argument) if self.amount_argument else None
        return float(value) if isinstance(value, int | float) else None
