"""What operators do to a running run, as events: a signed cancel that ends it, a signed
instruction that every later packet carries, and the refused attempts kept for audit
(``domain.operators`` decides who may)."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

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


class OperatorInstructed(Envelope):
    """An operator told the run something (``agentledger steer``): every later packet carries it
    as an ``operator_instruction`` item, above customer claims and below the pack's own
    instructions; it grants no tool, permission or approval."""

    kind: Literal["operator_instructed"] = "operator_instructed"
    instructed_by: str
    text: str
    operator_entry: Principal | None = None
    """The operator as the directory knew them when they steered (roles, tenant)."""
    assertion: VerifiedAssertion | None = None
    """The signed assertion that proved who steered, bound to this run and the exact text."""


class OperatorActionRefused(Envelope):
    """Someone tried to cancel or steer the run and was not allowed to."""

    kind: Literal["operator_action_refused"] = "operator_action_refused"
    action: Literal["cancel", "steer"]
    attempted_by: str
    reason_code: str
    detail: str


class RunForked(Envelope):
    """The run is a fork: it goes on from ``facts``, another run's exact state at one of its
    completed-operation boundaries (``domain.forks``). ``facts_hash`` is that run's state hash
    at ``origin_seq``; the fold takes the facts under this run's id."""

    kind: Literal["run_forked"] = "run_forked"
    origin_run_id: str
    origin_seq: int
    facts: dict[str, JsonValue]
    facts_hash: str
    dry: bool
    forked_by: str
    operator_entry: Principal | None = None
    """The operator as the directory knew them when they forked (roles, tenant)."""
    assertion: VerifiedAssertion | None = None
    """The signed assertion that proved who forked, bound to the work order and the origin."""
