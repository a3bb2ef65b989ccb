"""The records a run's state is made of: completed actions and calls in flight, decisions and
rejected options, evidence, approvals pending and decided, the conversation's turns, operators'
instructions, delegations, unresolved errors, the window's archive and the budget used.
``domain.state`` re-exports them with ``WorkingState``, which holds them."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import Field, JsonValue, SerializerFunctionWrapHandler, model_serializer

from agentledger.domain._model import Frozen
from agentledger.domain.decisions import ApprovalEdit, ToolCallProposal
from agentledger.domain.elicitation import ElicitationRequest
from agentledger.domain.tools import ReceiptStatus

SUMMARY_CHARS = 2_000
"""A completed action's summary is the receipt's one-line user view, cut to this length: the
state is carried across continue-as-new, and a tool may return tens of kilobytes per call. The
complete line stays in the receipt event, the complete result in the ledger (``output_hash``)."""


def bounded_summary(line: str) -> str:
    if len(line) <= SUMMARY_CHARS:
        return line
    cut = SUMMARY_CHARS - 40
    return f"{line[:cut]}… ({len(line) - cut} more characters in the receipt)"


class _AboutResource(Frozen):
    """A call that may record the resource it was about. Written without ``resource_id`` while
    it has none, so what compaction recorded for runs before the field existed stays exact."""

    resource_id: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_resource(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if isinstance(dumped, dict) and dumped.get("resource_id", "") is None:
            del dumped["resource_id"]
        return dumped


class CompletedAction(_AboutResource):
    operation_id: str
    tool: str
    status: ReceiptStatus
    receipt_id: str | None
    idempotency_key: str | None
    arguments_digest: str
    summary: str
    resource_id: str | None = None
    """What the call was about (the contract's resource argument), when its run recorded it."""


class Observation(Frozen):
    """The latest model view of one tool's result: an observation, never an instruction."""

    operation_id: str
    tool: str
    status: ReceiptStatus
    model_view: dict[str, JsonValue]
    observed_at: datetime


class InFlightCall(_AboutResource):
    """Authorised, dispatched, no receipt yet: compaction is impossible while one exists."""

    operation_id: str
    tool: str
    arguments: dict[str, JsonValue]
    arguments_digest: str
    idempotency_key: str | None
    approval_id: str | None
    resource_id: str | None = None


class DecisionNote(Frozen):
    seq: int
    step: str
    decision_type: str
    summary: str


class RejectedOption(Frozen):
    """A proposal the runtime refused, and why: fed back to the next step as structured data."""

    seq: int
    step: str
    option: str
    reason_code: str
    detail: str


class EvidenceRef(Frozen):
    source_id: str
    revision: str
    content_hash: str
    trust: str
    title: str
    text: str
    operation_id: str | None


class ApprovalRequest(Frozen):
    """What a person is asked to decide: the state keeps it while it is pending, and
    ``ApprovalRequested`` records exactly it (``domain.verdict_events.requested``)."""

    approval_id: str
    operation_id: str
    proposal: ToolCallProposal
    proposal_digest: str
    requested_by: str
    approver_role: str
    expires_at: datetime
    elicitation: ElicitationRequest | None = None
    """Set when a tool's server asked for human input: the grant must answer it."""
    eligible_approvers: tuple[str, ...] | None = None
    """Who the directory said may decide, when it was asked: anyone else is refused before the
    attempt reaches history. ``None`` in runs recorded before approvers came from the directory."""


class ApprovalOutcome(Frozen):
    """A decided approval. ``used`` flips when the approved call is dispatched: single use."""

    approval_id: str
    operation_id: str
    proposal_digest: str
    decision: Literal["granted", "rejected", "expired"]
    decided_by: str | None
    reason: str = ""
    expires_at: datetime
    used: bool = False
    content: dict[str, JsonValue] | None = None
    edit: ApprovalEdit | None = None
    """An edited grant: ``proposal_digest`` is then the edited call's, the only one it allows."""


class Turn(Frozen):
    """One message of a conversation: the agent's question or answer, or the customer's reply
    (the opening request is the work order's)."""

    seq: int
    role: Literal["agent", "user"]
    text: str
    at: datetime


class OperatorInstruction(Frozen):
    """What an operator told the run (``OperatorInstructed``); later packets carry it."""

    seq: int
    instructed_by: str
    text: str
    at: datetime


class AwaitedReply(Frozen):
    """The run is parked until its customer writes, or ``deadline`` passes."""

    seq: int
    reason: Literal["question", "follow_up"]
    step: str
    deadline: datetime


class HandoffRecord(Frozen):
    """One delegation and how it ended (``requested`` while its child runs)."""

    handoff: str
    child_run_id: str
    step: str
    status: Literal["requested", "completed", "refused"]
    output: dict[str, JsonValue] | None = None
    reason_code: str | None = None


class UnresolvedError(Frozen):
    error_id: str
    code: str
    message: str
    operation_id: str | None


class Archive(Frozen):
    """What a bounded state no longer holds (``domain.window``): the entries are events in the
    ledger, before ``through_seq``; the state keeps how many left and a digest chained over them.

    ``settled_writes`` keeps one thing the gate still needs of them: the arguments digest of every
    write that succeeded, or whose outcome is unknown, so a repeat is refused however long ago
    the first call was (``governance``)."""

    through_seq: int
    entries: dict[str, int]
    digest: str
    settled_writes: dict[str, ReceiptStatus] = Field(default_factory=dict)


class BudgetUsed(Frozen):
    steps: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost: Decimal = Decimal(0)
    """The sum of the run's priced model calls (``ModelCalled.cost``), in the price's currency."""

    @model_serializer(mode="wrap")
    def _cost_left_out_while_zero(self, handler: SerializerFunctionWrapHandler) -> Any:
        """So states recorded before ``cost`` existed (compaction facts) read back the same."""
        data = handler(self)
        if not self.cost and isinstance(data, dict):
            data.pop("cost", None)
        return data
