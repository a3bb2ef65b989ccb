"""WorkingState: what a run knows, derived only by folding its events (``domain.fold``).

Every field is a typed fact that must survive compaction exactly; nothing here is free text that a
summary could silently rewrite.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, JsonValue, model_validator

from agentledger.domain._model import Frozen, without_field
from agentledger.domain.decisions import Answer, ToolCallProposal
from agentledger.domain.state_records import (
    SUMMARY_CHARS,
    ApprovalOutcome,
    ApprovalRequest,
    Archive,
    AwaitedReply,
    BudgetUsed,
    CompletedAction,
    DecisionNote,
    EvidenceRef,
    HandoffRecord,
    InFlightCall,
    Observation,
    OperatorInstruction,
    RejectedOption,
    Turn,
    UnresolvedError,
    bounded_summary,
)
from agentledger.domain.tools import ReceiptStatus, ResourceRef, VerifiedFact
from agentledger.domain.workorder import Budget, WorkOrder

__all__ = [
    "ENDED",
    "SUMMARY_CHARS",
    "ApprovalOutcome",
    "ApprovalRequest",
    "Archive",
    "AwaitedReply",
    "BudgetUsed",
    "CompletedAction",
    "DecisionNote",
    "EvidenceRef",
    "HandoffRecord",
    "InFlightCall",
    "Observation",
    "OperatorInstruction",
    "Phase",
    "RejectedOption",
    "RunStatus",
    "Turn",
    "UnresolvedError",
    "WorkingState",
    "bounded_summary",
    "fact_key",
]

RunStatus = Literal["new", "running", "completed", "failed", "cancelled"]
ENDED: tuple[RunStatus, ...] = ("completed", "failed", "cancelled")
"""The statuses of a run that has ended: nothing follows them in its log."""
Phase = Literal["gathering", "answering", "acting", "done"]


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
    pending_approvals: dict[str, ApprovalRequest] = Field(default_factory=dict)
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
