"""What operators do to a running run, as events: a signed cancel that ends it, and the refused
attempts kept for audit (``domain.operators`` decides who may)."""

from __future__ import annotations

from typing import Literal

from agentledger.domain.assertions import VerifiedAssertion
from agentledger.domain.envelope import Envelope
from agentledger.domain.principal import Principal


class RunCancelled(Envelope):
    """The run ended because an operator cancelled it: nothing consequential started after the
    cancel was accepted, a call already in flight completed (its receipt comes before this)."""

    kind: Literal["run_cancelled"] = "run_cancelled"
    cancelled_by: str
    reason: str
    operator_entry: Principal | None = None
    """The operator as the directory knew them when they cancelled (roles, tenant)."""
    assertion: VerifiedAssertion | None = None
    """The signed assertion that proved who cancelled, bound to this run and the reason."""


class OperatorActionRefused(Envelope):
    """Someone tried to cancel (or otherwise act on) the run and was not allowed to."""

    kind: Literal["operator_action_refused"] = "operator_action_refused"
    action: Literal["cancel"]
    attempted_by: str
    reason_code: str
    detail: str
