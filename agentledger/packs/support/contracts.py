"""The support pack's argument and result models, and its refund approval rule.

The arguments are models of their own (the tools take them whole, ``arguments=``): a refund's
amount is checked exact in its currency across two fields, and the schemas are pinned by every
run recorded since the pack's first version. What each tool promises (scope, risk, approval,
the resource and facts it is bound by, how it is shown) is stated where it is declared
(``tools``, ``write_tools``)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentledger.packs.support.money import exact_amount
from agentledger.sdk import ApprovalRule, RoleAbove

ORDER_ID = r"^ord_[0-9]{1,12}$"
# Strict: a JSON ``true`` or ``"42.5"`` is refused, never coerced. The schema stays a JSON number
# (it is part of pinned contracts); exactness in the currency is checked by ``_exact``.
AMOUNT = Field(strict=True, gt=0, allow_inf_nan=False)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OrderRef(_Args):
    order_id: str = Field(pattern=ORDER_ID)


class CustomerRef(_Args):
    customer_id: str = Field(pattern=r"^usr_[0-9a-z]{1,16}$")


class PolicyQuery(_Args):
    query: str = Field(min_length=3, max_length=300)


class RefundRequest(_Args):
    order_id: str = Field(pattern=ORDER_ID)
    amount: float = AMOUNT
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    reason: str = Field(min_length=3, max_length=200)

    @model_validator(mode="after")
    def _exact(self) -> Self:
        exact_amount(self.amount, self.currency)  # raises: 0.001 EUR is refused, not rounded
        return self


class CustomerMessage(_Args):
    customer_id: str = Field(pattern=r"^usr_[0-9a-z]{1,16}$")
    body: str = Field(min_length=1, max_length=2000)


class OrderView(BaseModel):
    order_id: str
    status: str
    amount: float
    refundable_amount: float
    currency: str
    promised_by: str
    delivered_at: str | None


class CustomerView(BaseModel):
    customer_id: str
    name: str
    language: str
    tier: str


class PolicyResults(BaseModel):
    results: list[dict[str, Any]]


class RefundReceipt(BaseModel):
    refund_id: str
    order_id: str
    amount: float = Field(strict=True, allow_inf_nan=False)  # no bound: the schema is pinned
    currency: str

    @model_validator(mode="after")
    def _exact(self) -> Self:
        exact_amount(self.amount, self.currency)
        return self


class MessageReceipt(BaseModel):
    message_id: str


FINANCE_LIMIT = 250.0
"""Refunds above this amount need a ``finance_approver`` (any currency: amounts are per order)."""
REFUND_APPROVAL = ApprovalRule(
    kind="always",
    amount_argument="amount",
    roles_above=(RoleAbove(role="finance_approver", above=FINANCE_LIMIT),),
)
"""Every refund is approved; one over ``FINANCE_LIMIT`` only by a finance approver."""
