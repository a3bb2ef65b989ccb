"""WorkingState: what a run knows, derived only by folding its events (``domain.fold``).

Every field is a typed fact that must survive compaction exactly; nothing here is free text that a
summary could silently rewrite.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import (
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from agentledger.domain._model import Frozen, without_field
from agentledger.domain.decisions import Answer, ApprovalEdit, ToolCallProposal
from agentledger.domain.elicitation import ElicitationRequest
from agentledger.domain.tools import ReceiptStatus, ResourceRef, VerifiedFact
from agentledger.domain.workorder import Budget, WorkOrder

RunStatus = Literal["new", "running", "completed", "failed", "cancelled"]
ENDED: tuple[RunStatus, ...] = ("completed", "failed", "cancelled")
"""The statuses of a run that has ended: nothing follows them in its log."""
Phase = Literal["gathering", "answering", "acting", "done"]


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


class PendingApproval(Frozen):
    approval_id: str
    operation_id: str
    proposal: ToolCallProposal
    proposal_digest: str
    requested_by: str
    approver_role: str
    expires_at: datetime
    elicitation: ElicitationRequest | None = None
    eligible_approvers: tuple[str, ...] | None = None


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


class WorkingState(Frozen):
    """The pure projection of one run's events."""

    run_id: str = ""
    status: RunStatus = "new"
    last_seq: int = 0
    work_order: WorkOrder | None = None
    started_at: datetime | None = None
    current_step: str | None = None
    phase: Phase = "gathering"
    verified_facts: dict[str, VerifiedFact] = Field(default_factory=dict)
    resources: dict[str, ResourceRef] = Field(default_factory=dict)
    completed_actions: tuple[CompletedAction, ...] = ()
    observations: dict[str, Observation] = Field(default_factory=dict)
    in_flight: dict[str, InFlightCall] = Field(default_factory=dict)
    decisions: tuple[DecisionNote, ...] = ()
    rejected_options: tuple[RejectedOption, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()
    source_versions: dict[str, str] = Field(default_factory=dict)
    policy_version: str | None = None
    pending_approvals: dict[str, PendingApproval] = Field(default_factory=dict)
    approvals: dict[str, ApprovalOutcome] = Field(default_factory=dict)
    unresolved_errors: dict[str, UnresolvedError] = Field(default_factory=dict)
    budget: Budget = Field(default_factory=Budget)
    used: BudgetUsed = Field(default_factory=BudgetUsed)
    proposed_action: ToolCallProposal | None = None
    last_answer: Answer | None = None
    last_packet_hash: str | None = None
    compacted_through_seq: int = 0
    at_step: str | None = None
    """Under a step graph: the step a ``proceed`` moved the run to (``None``: the entry)."""
    awaiting: AwaitedReply | None = None
    conversation: tuple[Turn, ...] = ()
    queued_replies: tuple[Turn, ...] = ()
    """Messages sent while the run worked (double-texting ``queue``/``interrupt``), oldest
    first: each enters the conversation when the run takes it."""
    reply_refusals: int = 0
    handoffs: dict[str, HandoffRecord] = Field(default_factory=dict)
    """Delegations to child runs, by child run id (``domain.handoffs``)."""
    archived: Archive | None = None
    """Set once a compaction bounded the state (``domain.window``): what left it, by digest."""
    spent_assertions: dict[str, datetime] = Field(default_factory=dict)
    """Token ids of the assertions this run accepted, each until it could no longer be valid:
    a decision or reply is taken once (``domain.assertions.spent_after``). Never windowed."""
    operator_instructions: tuple[OperatorInstruction, ...] = ()
    """What operators told the run (``agentledger steer``); every later packet carries them."""

    def facts(self) -> dict[str, Any]:
        """The state as compaction records it. Fields added for conversations and step graphs
        are left out while at their defaults, so a run compacted before they existed records
        the same facts when it replays."""
        unset = {name for name in _LATER_FIELDS if getattr(self, name) in (None, (), 0, {})}
        return self.model_dump(mode="json", exclude=unset or None)

    @model_validator(mode="before")
    @classmethod
    def _drop_open_commitments(cls, data: Any) -> Any:
        """States recorded before ``open_commitments`` was removed carry it (nothing ever opened
        one, so it is always empty): continuation inputs and compacted facts still read."""
        return without_field(data, "open_commitments")

    @property
    def principal_id(self) -> str:
        return self.work_order.principal.user_id if self.work_order else ""

    def fact(self, resource_id: str | None, name: str) -> VerifiedFact | None:
        return self.verified_facts.get(fact_key(resource_id, name))

    def remaining_tool_calls(self) -> int:
        return self.budget.tool_calls - self.used.tool_calls

    def remaining_steps(self) -> int:
        return self.budget.steps - self.used.steps

    def remaining_tokens(self) -> int:
        return self.budget.tokens - self.used.tokens

    def handoff_running(self) -> bool:
        return any(h.status == "requested" for h in self.handoffs.values())

    def handoff_output(self, handoff: str) -> dict[str, JsonValue] | None:
        """The latest completed output of ``handoff`` (``None``: none completed)."""
        done = [h for h in self.handoffs.values() if h.handoff == handoff and h.output]
        return done[-1].output if done else None

    def receipt_for(self, operation_id: str) -> CompletedAction | None:
        return next((a for a in self.completed_actions if a.operation_id == operation_id), None)

    def settled_write(self, digest: str) -> set[ReceiptStatus]:
        """The outcomes of this run's earlier calls with these arguments (``arguments_digest``;
        in the window, or archived writes): ``succeeded`` or ``unknown`` mean the gate must not
        let a write run again."""
        earlier = {a.status for a in self.completed_actions if a.arguments_digest == digest}
        if self.archived is not None and digest in self.archived.settled_writes:
            earlier.add(self.archived.settled_writes[digest])
        return earlier


_LATER_FIELDS = (
    "at_step",
    "awaiting",
    "conversation",
    "reply_refusals",
    "handoffs",
    "archived",
    "spent_assertions",
    "operator_instructions",
    "queued_replies",
)


def fact_key(resource_id: str | None, name: str) -> str:
    """Facts are keyed by resource so two orders' amounts never collide."""
    return f"{resource_id}.{name}" if resource_id else name
