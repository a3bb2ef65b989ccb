"""Exactly what crosses the activity boundary: one input and one output model per activity
(a model step's result is the domain's ``ModelStepResult``: the domain decides what follows it).

Kept small on purpose: packets and full tool outputs stay in the ledger, history carries digests.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agentledger.domain.events import RunEvent
from agentledger.domain.forks import ForkOrigin
from agentledger.domain.handoffs import HandoffOrigin
from agentledger.domain.model_calls import ModelStepResult, PacketSummary, TokenUsage
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import WorkOrder


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PrepareRunInput(_Message):
    run_id: str
    work_order: WorkOrder
    handoff_origin: HandoffOrigin | None = None
    """Set for a child run: its profile is one of the pack's ``profiles``, narrowed to this."""
    schedule_id: str | None = None
    """Set for a schedule's firing: the schedule the ledger's journal must hold for exactly
    this work order (its requester signed nothing at firing time; the schedule's maker did)."""
    fork: ForkOrigin | None = None
    """Set for a fork: the original's ledger must show its work order and the fork point."""


class ActivityQueues(_Message):
    """Where a run's model calls and tool calls go, so the workers that make them scale apart
    from those that run workflow tasks; ``None``: the run's own task queue (eager dispatch).
    The deployment's workers say which (``AGENTLEDGER_MODEL_QUEUE``/``_TOOL_QUEUE``), never a
    run's starter: a queue is where a call's arguments, and the principal's authority, are sent."""

    model: str | None = None
    tool: str | None = None


class ResumeInput(_Message):
    """What a run carried across continue-as-new, by hash, to be checked against its ledger."""

    run_id: str
    state_hash: str
    manifest_hash: str


class ForkPointInput(_Message):
    """A fork's origin: the state there is read from the original's ledger and checked."""

    origin: ForkOrigin


class NoticeInput(_Message):
    """A pending approval to announce on one channel (``activities.notices``)."""

    run_id: str
    approval_id: str
    channel: str
    tenant_id: str
    tool: str
    approver_role: str
    eligible_approvers: tuple[str, ...]
    expires_at: datetime
    arguments: dict[str, JsonValue]


class NoticeSent(_Message):
    channel_kind: Literal["webhook", "email"]
    recipients: int


class HousekeepingInput(_Message):
    now: datetime
    """The firing's time (the workflow's clock): what is due by then is done."""


class PrunedLeftovers(_Message):
    answer_streams: int
    sandboxes: int
    runs_shredded: int = 0
    """Runs whose content expired under their tenant's retention (0 in firings before it)."""


class HousekeepingDone(_Message):
    expired_memories: tuple[str, ...]
    pruned: PrunedLeftovers | None = None
    """``None`` from firings before ended runs were pruned (patch prune-ended-runs)."""


class EligibleApproversInput(_Message):
    tenant_id: str
    role: str
    requested_by: str


class ProposeMemoryInput(_Message):
    principal: Principal
    now: datetime
    outbox: list[RunEvent] = Field(default_factory=list)


class ProposedMemory(BaseModel):
    model_config = ConfigDict(frozen=True)
    memory_id: str
    state: str
    refused: str | None = None
    awaiting_person: tuple[str, ...] = ()


class LookUpPrincipalInput(_Message):
    user_id: str
    key_id: str | None = None
    """The key that signed the decision: the worker says whether it has been revoked since."""
    issuer: str | None = None
    """The foreign issuer speaking for the subject: the worker says which tenants it binds."""


class DirectoryEntry(_Message):
    principal: Principal | None
    key_revoked: bool = False
    issuer_tenants: tuple[str, ...] | None = None
    """The tenants the asked ``issuer`` may speak for (``None``: none was asked)."""


class AppendInput(_Message):
    events: list[RunEvent]


class ModelStepInput(_Message):
    run_id: str
    step: str
    manifest_hash: str
    state: WorkingState
    now: datetime
    outbox: list[RunEvent] = Field(default_factory=list)


class ToolStepInput(_Message):
    run_id: str
    pack: str
    operation_id: str
    tool: str
    arguments: dict[str, JsonValue]
    idempotency_key: str | None
    principal: Principal
    now: datetime
    outbox: list[RunEvent] = Field(default_factory=list)
    manifest_hash: str = ""
    """Resolves tools the manifest pins (MCP) rather than the pack's own."""
    elicitation_answers: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)
    """Content a human approved for an MCP server's elicitation request, by request digest."""


class ReconcileToolInput(ToolStepInput):
    """``reconcile_tool``'s input: the call whose outcome was lost, as it was sent (the same
    fields, so its payload is the one ``execute_tool`` took)."""


__all__ = [
    "ActivityQueues",
    "AppendInput",
    "DirectoryEntry",
    "EligibleApproversInput",
    "ForkPointInput",
    "LookUpPrincipalInput",
    "ModelStepInput",
    "ModelStepResult",
    "NoticeInput",
    "NoticeSent",
    "PacketSummary",
    "PrepareRunInput",
    "ProposeMemoryInput",
    "ProposedMemory",
    "ReconcileToolInput",
    "ResumeInput",
    "TokenUsage",
    "ToolStepInput",
]
