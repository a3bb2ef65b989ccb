"""Refund amounts are exact in their currency's minor unit: refused, never rounded or coerced.

The arguments' JSON schema is pinned by tool contracts and recorded histories, so the checks live
in validation, not in the schema; the last test holds the schema to that.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from agentledger.packs.support import PACK
from agentledger.packs.support.contracts import RefundReceipt, RefundRequest
from agentledger.packs.support.money import exact_amount


def refund(amount: Any, currency: str = "EUR") -> RefundRequest:
    return RefundRequest.model_validate(
        {"order_id": "ord_4821", "amount": amount, "currency": currency, "reason": "arrived late"}
    )


def refusal(amount: Any, currency: str = "EUR") -> str:
    with pytest.raises(ValidationError) as caught:
        refund(amount, currency)
    return str(caught.value)


def test_a_tenth_of_a_cent_is_refused_not_rounded_to_zero() -> None:
    assert "0.001 EUR has more decimal places than EUR has (2)" in refusal(0.001)
    assert "never rounded" in refusal(42.505)


def test_a_json_true_is_not_a_one_euro_refund() -> None:
    assert "valid number" in refusal(True)
    assert "valid number" in refusal(False)


def test_a_number_in_a_string_is_not_coerced() -> None:
    assert "valid number" in refusal("42.50")


def test_yen_have_no_minor_unit() -> None:
    assert refund(1, "JPY").amount == 1
    assert "1.5 JPY has more decimal places than JPY has (0)" in refusal(1.5, "JPY")


def test_whole_cents_in_euro_and_fils_in_dinar_are_accepted_exactly() -> None:
    assert refund(42.50).amount == 42.5
    assert exact_amount(42.50, "EUR") == Decimal("42.50")
    assert exact_amount(0.125, "KWD") == Decimal("0.125")
    assert "0.1255 KWD" in refusal(0.1255, "KWD")


def test_an_unknown_currency_or_an_impossible_amount_is_refused() -> None:
    assert "currency XYZ is not supported" in refusal(10, "XYZ")
    assert "finite number" in refusal(float("inf"))
    assert "can hold" in refusal(1e12)
    assert "greater than 0" in refusal(0)


def test_a_receipt_carries_an_exact_amount_too() -> None:
    assert RefundReceipt(refund_id="rf_1", order_id="ord_1", amount=42.5, currency="EUR")
    with pytest.raises(ValidationError):
        RefundReceipt(refund_id="rf_1", order_id="ord_1", amount=0.001, currency="EUR")


def test_the_amount_schema_is_still_the_pinned_json_number() -> None:
    contract = PACK.tools["create_refund"].contract
    schema = contract.input_model.model_json_schema()["properties"]["amount"]
    assert schema == {"exclusiveMinimum": 0, "title": "Amount", "type": "number"}
