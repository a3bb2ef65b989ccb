"""What crosses the workflow's boundary: its input, outcome, continuation, and the payloads of
its approval and reply updates.

Plain pydantic values with no workflow calls, so the worker's sandbox passes this module
through (``app.PASSTHROUGH``) instead of rebuilding these classes for every run it starts: a
pydantic class costs milliseconds to build, and the sandbox re-imports what it does not pass
through once per workflow run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue

from agentledger.activities.messages import ActivityQueues
from agentledger.domain.approval_edits import edit_digest
from agentledger.domain.forks import ForkOrigin
from agentledger.domain.handoffs import HandoffOrigin
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.principal import Principal
from agentledger.domain.state import BudgetUsed, RunStatus, WorkingState
from agentledger.domain.workorder import WorkOrder


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(frozen=True)
    approval_id: str
    approver_id: str = ""
    """Who decides, by id in any spelling; their roles and tenant come from the directory."""
    approver: Principal | None = None
    """Sent whole by clients before the directory decided identity. Replays of their runs use
    it; a new decision that still claims a principal is refused."""
    approve: bool
    proposal_digest: str
    reason: str = ""
    content: dict[str, JsonValue] | None = None
    """The answer to an approval that carries a server's elicitation request."""
    assertion: str = ""
    """A compact JWS signed by a key the run pinned: who decides, proven (``domain.assertions``).
    Required by every run whose manifest pins approval keys; its subject is the approver."""
    edits: dict[str, JsonValue] | None = None
    """Approve the call with these arguments changed (``domain.approval_edits``); the assertion
    then signs ``edit_digest(proposal_digest, edits)``."""

    def signed_digest(self) -> str:
        """The digest the decision's assertion must sign."""
        if self.edits is None:
            return self.proposal_digest
        return edit_digest(self.proposal_digest, self.edits)

    def claimed_id(self) -> str:
        return self.approver_id or (self.approver.user_id if self.approver else "")


class ApprovalResult(BaseModel):
    approval_id: str
    decision: str


class Reply(BaseModel):
    """A customer's message to a waiting run, as ``principal_id``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    principal_id: str
    text: str
    assertion: str = ""
    """A compact JWS by a trusted issuer that ``principal_id`` sent exactly ``text``; required
    by every run whose manifest pins trusted keys (``domain.assertions``)."""


class CancelOrder(BaseModel):
    """An operator's cancel of a live run, for a reason they sign (``agentledger cancel``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    operator_id: str
    reason: str
    assertion: str = ""
    """A compact JWS by a trusted issuer: ``operator_id`` cancels this run for exactly
    ``reason`` (decision ``cancel``, audience ``cancel_audience``)."""


class CancelResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: RunStatus
    """How the run ended: ``cancelled``, or how it ended first when a call in flight finished it."""


class SteerOrder(BaseModel):
    """An operator's instruction to a live run, signed (``agentledger steer``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    operator_id: str
    text: str
    assertion: str = ""
    """A compact JWS by a trusted issuer: ``operator_id`` tells this run exactly ``text``
    (decision ``steer``, audience ``steer_audience``)."""


class SteerResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    seq: int
    """The ``operator_instructed`` event's: later packets carry the instruction."""


class ReplyResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    seq: int
    reply_id: str
    queued: bool = False
    """Held: sent while the run worked, taken when it next asks or answers (or, to interrupt,
    at its next safe point), under the profile's double-texting policy."""


class Continuation(BaseModel):
    """What a run carries across continue-as-new: its exact state, that state's hash, and the
    attempt's frozen manifest (the attempt does not change, so neither does its manifest)."""

    model_config = ConfigDict(frozen=True)
    state: WorkingState
    state_hash: str
    manifest: ExecutionManifest


class RunInput(BaseModel):
    model_config = ConfigDict(frozen=True)
    run_id: str
    work_order: WorkOrder
    continued: Continuation | None = None
    queues: ActivityQueues | None = None
    """Read only by runs started before the ``deployment-queues`` patch; the queues are now the
    deployment's (``AGENTLEDGER_MODEL_QUEUE``/``_TOOL_QUEUE`` of the workflow's workers)."""
    handoff: HandoffOrigin | None = None
    """Set on a child run started by a parent's delegation (``workflows._handoffs``)."""
    requester_assertion: str = ""
    """A compact JWS by a trusted issuer that the work order's requester asks for exactly this
    work order to run under this run id (``domain.assertions``); required of every new run but
    a delegated child (its parent's ledger vouches) and a schedule's firing (its journal does)."""
    schedule_id: str | None = None
    """Set by ``ScheduledRun``: the schedule this firing is of (``prepare_run`` checks it)."""
    fork: ForkOrigin | None = None
    """Set on a fork (``agentledger fork``): where it starts; ``requester_assertion`` is then
    its operator's, over the work order and this origin (``workflows._forks``)."""


class RunOutcome(BaseModel):
    """How the run ended, and its answer when it completed."""

    model_config = ConfigDict(frozen=True)
    status: RunStatus
    answer: str | None = None
    reason_code: str | None = None
    """Why a child run failed (child runs only: their parent records it)."""
    used: BudgetUsed | None = None
    """What a child run spent (child runs only: charged to their parent)."""


class ScheduledRunInput(BaseModel):
    """What a schedule's every firing starts: the work order frozen when the schedule was made
    (its requester's claim is checked against the directory at each firing, by the run)."""

    model_config = ConfigDict(frozen=True)
    schedule_id: str
    work_order: WorkOrder
