"""Money and proration, exactly: Decimal in the currency's minor unit, never rounded up.

A prorated credit is the unused whole days of the paid period that covers ``now``, as a share of
the invoice, rounded down to the minor unit, less what was already credited against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import ROUND_DOWN, Decimal

MINOR_UNITS: Mapping[str, int] = {"EUR": 2, "USD": 2, "GBP": 2, "CHF": 2}
"""The currencies this pack bills in, with their ISO 4217 exponents."""


def quantum(currency: str) -> Decimal:
    return Decimal(1).scaleb(-MINOR_UNITS[currency])


def exact(amount: Decimal, currency: str) -> Decimal | None:
    """``amount`` if it is a positive, exact amount of ``currency``; ``None`` if it is not."""
    if currency not in MINOR_UNITS or not amount.is_finite() or amount <= 0:
        return None
    held = amount.quantize(quantum(currency))
    return held if held == amount else None


def prorated(
    amount: Decimal,
    currency: str,
    period: tuple[datetime, datetime],
    now: datetime,
    already_credited: Decimal,
) -> Decimal:
    """What is left to credit on an invoice of ``amount`` for ``period`` at ``now`` (>= 0)."""
    start, end = period
    if not start <= now < end:
        return Decimal(0).quantize(quantum(currency))
    total_days = max((end - start).days, 1)
    unused_days = (end - now).days
    share = (amount * unused_days / total_days).quantize(quantum(currency), rounding=ROUND_DOWN)
    return max(share - already_credited, Decimal(0)).quantize(quantum(currency))


def text(amount: Decimal | float, currency: str) -> str:
    return f"{Decimal(str(amount)).quantize(quantum(currency))} {currency}"
