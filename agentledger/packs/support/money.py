"""Money as the system of record holds it: exact, in the currency's minor unit.

Tool arguments carry amounts as JSON numbers (their schema is part of pinned tool contracts), so
an amount is checked, never rounded: ``Decimal(str(amount))`` is the decimal the JSON spelled, and
it must have no more places than the currency's ISO 4217 exponent. 0.001 EUR is refused, not paid
as 0.00; a currency whose exponent is not known here is refused too, rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

__all__ = ["MAX_INTEGER_DIGITS", "MINOR_UNITS", "exact_amount"]

MINOR_UNITS: Mapping[str, int] = {
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLP", "ISK", "JPY", "KRW", "PYG", "UGX", "VND", "XAF", "XOF"), 0),
    **dict.fromkeys(
        (
            "AED", "AUD", "BRL", "CAD", "CHF", "CNY", "CZK", "DKK", "EUR", "GBP", "HKD", "HUF",
            "ILS", "INR", "MXN", "NOK", "NZD", "PLN", "RON", "SEK", "SGD", "THB", "TRY", "USD",
            "ZAR",
        ),
        2,
    ),
}  # fmt: skip
"""ISO 4217 minor-unit exponents of the currencies this pack settles in."""

MAX_INTEGER_DIGITS = 10
"""Digits before the point that the amount columns hold (``records``: Numeric(13, 3))."""


def exact_amount(amount: float, currency: str) -> Decimal:
    """The amount as an exact Decimal in ``currency``; ``ValueError`` says why it is not one."""
    exponent = MINOR_UNITS.get(currency)
    if exponent is None:
        raise ValueError(f"currency {currency} is not supported: its minor unit is unknown")
    value = Decimal(str(amount))
    if not value.is_finite() or value.adjusted() >= MAX_INTEGER_DIGITS:
        raise ValueError(f"{amount} {currency} is not an amount the system of record can hold")
    exact = value.quantize(Decimal(1).scaleb(-exponent))
    if exact != value:
        raise ValueError(
            f"{value} {currency} has more decimal places than {currency} has ({exponent}); "
            "amounts are never rounded"
        )
    return exact
