"""The billing tools' argument types and result models (their JSON schemas are the contracts')."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, Field

SubscriptionId = Annotated[str, Field(pattern=r"^sub_[0-9]{4,12}$")]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
Reason = Annotated[str, Field(min_length=3, max_length=200)]
Months = Annotated[int, Field(ge=1, le=3)]
Amount = Annotated[Decimal, Field(gt=0, le=100_000)]


class SubscriptionSummary(BaseModel):
    subscription_id: str
    plan: str
    status: str


class SubscriptionList(BaseModel):
    subscriptions: list[SubscriptionSummary]
    count: int


class Subscription(BaseModel):
    subscription_id: str
    plan: str
    status: str
    currency: str
    monthly_price: Decimal
    period_start: str
    period_end: str
    paused_until: str | None
    credit_available: Decimal
    """The prorated credit still due on the paid period covering now (0 when none)."""


class Invoice(BaseModel):
    invoice_id: str
    amount: Decimal
    currency: str
    status: str
    period_start: str
    period_end: str


class InvoiceList(BaseModel):
    subscription_id: str
    invoices: list[Invoice]
    open_balance: Decimal


class Cancellation(BaseModel):
    change_id: str
    subscription_id: str
    status: str
    service_until: str


class Pause(BaseModel):
    change_id: str
    subscription_id: str
    status: str
    resumes_on: str


class Credit(BaseModel):
    credit_id: str
    subscription_id: str
    invoice_id: str
    amount: Decimal
    currency: str
