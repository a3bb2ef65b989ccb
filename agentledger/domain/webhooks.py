"""Signed webhooks, the pure part: what a delivery's signature is, whether one is good and in
time, which run a delivery starts, and what a pack's mapper turns a payload into.

A sender signs ``<timestamp>.<delivery id>.<body>`` with HMAC-SHA256 under the source's secret
and sends ``X-AgentLedger-Timestamp`` (Unix seconds), ``X-AgentLedger-Delivery`` and
``X-AgentLedger-Signature: sha256=<hex>``. The delivery id is signed so that a captured
delivery cannot be sent again under a fresh id; the timestamp is signed so that it cannot be
sent again later than the window. Time is an argument: nothing here reads a clock.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentledger.domain.request_limit import MAX_REQUEST_CHARS

TIMESTAMP_HEADER = "X-AgentLedger-Timestamp"
DELIVERY_HEADER = "X-AgentLedger-Delivery"
SIGNATURE_HEADER = "X-AgentLedger-Signature"
SCHEME = "sha256="
DEFAULT_WINDOW = timedelta(minutes=5)
MAX_DELIVERY_ID = 200

SignatureProblem = Literal["missing-signature", "invalid-signature", "stale-delivery"]


class MappedOrder(BaseModel):
    """What a pack's webhook mapper returns: the run's request and who it is for (a directory
    user id; the source's configuration bounds the tenants it may name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    request: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS)
    requester: str = Field(min_length=1, max_length=200)


class PayloadRejected(ValueError):
    """A payload the pack's mapper will not turn into a work order; ``reason`` is for the
    sender (answered as ``payload-rejected``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def signature(secret: bytes, timestamp: str, delivery_id: str, body: bytes) -> str:
    """The ``X-AgentLedger-Signature`` value a sender sends."""
    signed = f"{timestamp}.{delivery_id}.".encode() + body
    return SCHEME + hmac.new(secret, signed, hashlib.sha256).hexdigest()


def signature_problem(
    secret: bytes,
    *,
    timestamp: str | None,
    delivery_id: str | None,
    sent: str | None,
    body: bytes,
    now: datetime,
    window: timedelta = DEFAULT_WINDOW,
) -> SignatureProblem | None:
    """Why the delivery is not to be believed (``None``: it is). The signature is compared in
    constant time before the timestamp is judged, so a forger learns nothing from which."""
    if not timestamp or not delivery_id or not sent:
        return "missing-signature"
    expected = signature(secret, timestamp, delivery_id, body)
    if not hmac.compare_digest(expected.encode(), sent.strip().encode()):
        return "invalid-signature"
    if not timestamp.isdigit():
        return "invalid-signature"
    if abs(now.timestamp() - int(timestamp)) > window.total_seconds():
        return "stale-delivery"
    return None


def delivery_run_id(pack: str, source: str, delivery_id: str) -> str:
    """The run a delivery starts: the same for every redelivery of it, and no other's."""
    key = "\x00".join((pack, source, delivery_id)).encode()
    return f"run-hook-{hashlib.sha256(key).hexdigest()[:24]}"
