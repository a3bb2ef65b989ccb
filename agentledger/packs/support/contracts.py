"""The support pack's tool contracts: argument and result models, and what each tool promises
(scope, risk, approval rule, the resource and facts it is bound by, how it is shown)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentledger.domain.tools import ApprovalRule, FactBound, ModelView, RoleAbove, ToolContract
from agentledger.packs.support.money import exact_amount

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


GET_ORDER = ToolContract(
    name="get_order",
    version="1.0.0",
    description="Read one of the requester's orders.",
    input_model=OrderRef,
    output_model=OrderView,
    scope="read",
    risk="low",
    required_scope="orders:read",
    resource_argument="order_id",
    model_view=ModelView(
        untouchable_fields=("order_id", "amount", "refundable_amount", "currency", "status")
    ),
    summary_template="Order {order_id}: {status}, refundable {refundable_amount} {currency}",
)
GET_CUSTOMER = ToolContract(
    name="get_customer",
    version="1.0.0",
    description="Read the requester's customer profile.",
    input_model=CustomerRef,
    output_model=CustomerView,
    scope="read",
    risk="low",
    required_scope="orders:read",
    resource_argument="customer_id",
    summary_template="Customer {customer_id}: {name} ({tier})",
)
SEARCH_RETURNS_POLICY = ToolContract(
    name="search_returns_policy",
    version="1.0.0",
    description="Search the approved returns and shipping policies.",
    input_model=PolicyQuery,
    output_model=PolicyResults,
    scope="read",
    risk="low",
    required_scope="policies:read",
    model_view=ModelView(
        mode="slim",
        list_field="results",
        keep_fields=("source_id", "title", "text"),
        truncate_words=150,
        max_items=6,
        untouchable_fields=("source_id", "revision"),
    ),
    summary_template="Policy search: {count} passages",
)
FINANCE_LIMIT = 250.0
"""Refunds above this amount need a ``finance_approver`` (any currency: amounts are per order)."""
CREATE_REFUND = ToolContract(
    name="create_refund",
    version="1.0.0",
    description="Refund an order to the original payment method. Requires approval.",
    input_model=RefundRequest,
    output_model=RefundReceipt,
    scope="write",
    risk="consequential",
    required_scope="refunds:request",
    resource_argument="order_id",
    # Every refund is approved; one over FINANCE_LIMIT only by a finance approver.
    approval=ApprovalRule(
        kind="always",
        amount_argument="amount",
        roles_above=(RoleAbove(role="finance_approver", above=FINANCE_LIMIT),),
    ),
    fact_bounds=(
        FactBound(argument="amount", fact="refundable_amount", relation="at_most"),
        FactBound(argument="currency", fact="currency", relation="equals"),
    ),
    summary_template="Refund {refund_id}: {amount} {currency} for {order_id}",
)
SEND_CUSTOMER_MESSAGE = ToolContract(
    name="send_customer_message",
    version="1.0.0",
    description="Send the customer a message.",
    input_model=CustomerMessage,
    output_model=MessageReceipt,
    scope="write",
    risk="consequential",
    required_scope="messages:send",
    resource_argument="customer_id",
    approval=ApprovalRule(kind="always"),
    summary_template="Message {message_id} sent",
)
