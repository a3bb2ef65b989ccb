"""The run's event catalogue: typed, frozen, past-tense facts in one discriminated union.

Every event shares one envelope (run id, sequence number, time, manifest hash, schema version).
The workflow is the only author of events; activities persist them. Older stored shapes are
upgraded on read by ``domain.upcasting``. Approvals', conversations' and operators' events live
in modules of their own (``approval_events``, ``conversation_events``, ``operator_events``) and
are re-exported here, so ``RunEvent`` stays the one union.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, TypeAdapter, field_validator

from agentledger.domain._model import without_field
from agentledger.domain.approval_events import ApprovalAttemptRefused as ApprovalAttemptRefused
from agentledger.domain.approval_events import ApprovalExpired as ApprovalExpired
from agentledger.domain.approval_events import ApprovalGranted as ApprovalGranted
from agentledger.domain.approval_events import (
    ApprovalNotificationFailed as ApprovalNotificationFailed,
)
from agentledger.domain.approval_events import ApprovalNotified as ApprovalNotified
from agentledger.domain.approval_events import ApprovalRejected as ApprovalRejected
from agentledger.domain.approval_events import ApprovalRequested as ApprovalRequested
from agentledger.domain.conversation_events import ConversationClosed as ConversationClosed
from agentledger.domain.conversation_events import ReplyAwaited as ReplyAwaited
from agentledger.domain.conversation_events import ReplyRefused as ReplyRefused
from agentledger.domain.conversation_events import ReplyTaken as ReplyTaken
from agentledger.domain.conversation_events import UserReplied as UserReplied
from agentledger.domain.decisions import Claim, Decision
from agentledger.domain.envelope import SCHEMA_VERSION as SCHEMA_VERSION
from agentledger.domain.envelope import Envelope as Envelope
from agentledger.domain.operator_events import OperatorActionRefused as OperatorActionRefused
from agentledger.domain.operator_events import OperatorInstructed as OperatorInstructed
from agentledger.domain.operator_events import RunCancelled as RunCancelled
from agentledger.domain.operator_events import RunForked as RunForked
from agentledger.domain.tools import Receipt
from agentledger.domain.verdicts import AuthorisedCall
from agentledger.domain.workorder import Budget, WorkOrder


class RunStarted(Envelope):
    kind: Literal["run_started"] = "run_started"
    work_order: WorkOrder
    policy_version: str


class RunCompleted(Envelope):
    kind: Literal["run_completed"] = "run_completed"
    answer: str
    cited_source_ids: tuple[str, ...]
    claimed_operation_ids: tuple[str, ...] = ()
    claims: tuple[Claim, ...] = ()
    """The effects the answer reported, each checked against its receipt (``domain.claims``);
    ``answer`` carries their confirmation lines."""
    total_cost: Decimal | None = None
    """The run's model calls' cost (``None``: no call was priced)."""
    currency: str | None = None


class RunFailed(Envelope):
    kind: Literal["run_failed"] = "run_failed"
    reason_code: str
    message: str


class StepStarted(Envelope):
    kind: Literal["step_started"] = "step_started"
    step: str


class ContextPacketBuilt(Envelope):
    """The packet itself lives in the ledger under ``packet_hash``; history carries its digest."""

    kind: Literal["context_packet_built"] = "context_packet_built"
    step: str
    packet_hash: str
    cache_key: str
    section_tokens: dict[str, int]
    total_tokens: int
    omission_count: int
    included_ids: tuple[str, ...] = ()


class DecisionRecorded(Envelope):
    kind: Literal["decision_recorded"] = "decision_recorded"
    step: str
    decision: Decision
    model_profile: str


class DecisionRejected(Envelope):
    """A malformed or disallowed proposal; fed back to the next step as a structured error."""

    kind: Literal["decision_rejected"] = "decision_rejected"
    step: str
    reason_code: str
    detail: str
    option: str = ""
    raw_reply: str = ""
    """For an unusable model reply: the reply as received, bounded; never shown to a customer."""


class ToolCallAuthorised(Envelope, AuthorisedCall):
    kind: Literal["tool_call_authorised"] = "tool_call_authorised"
    operation_id: str
    resource_id: str | None = None
    """The value of the contract's resource argument (``tools.resource_of``); recorded under
    manifests that bind claims, so an answer's claim can be checked against it."""


class ToolCallDenied(Envelope):
    kind: Literal["tool_call_denied"] = "tool_call_denied"
    operation_id: str
    tool: str
    reason_code: str
    detail: str


class ToolReceiptRecorded(Envelope):
    kind: Literal["tool_receipt_recorded"] = "tool_receipt_recorded"
    receipt: Receipt


class EvidenceRecorded(Envelope):
    kind: Literal["evidence_recorded"] = "evidence_recorded"
    source_id: str
    revision: str
    content_hash: str
    trust: str
    title: str
    text: str
    operation_id: str | None = None


class ErrorRecorded(Envelope):
    kind: Literal["error_recorded"] = "error_recorded"
    error_id: str
    code: str
    message: str
    operation_id: str | None = None


class BudgetCharged(Envelope):
    kind: Literal["budget_charged"] = "budget_charged"
    steps: int = 0
    tool_calls: int = 0
    tokens: int = 0
    reason: str = ""
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = False
    """True when the provider reported the counts; otherwise they are the packet's estimate."""


class ModelCalled(Envelope):
    """One model call that answered a step: which provider and model (a fallback's, when the
    chain moved down), the activity attempt, the tokens the provider reported and their cost at
    the frozen price (``None``: the model has no price)."""

    kind: Literal["model_called"] = "model_called"
    step: str
    provider: str
    model: str
    attempt: int = 1
    route: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = False
    cost: Decimal | None = None
    currency: str | None = None


class HistoryCompacted(Envelope):
    """Replaces events up to ``through_seq``; ``facts`` is the exact typed state at that point.

    With a ``window``, the state was bounded first (``domain.window``): the histories beyond
    their latest ``window`` entries left it for its archive. ``None``: compacted as it was.

    ``summary`` is prose for people and models, labelled ``model_summary``; it is never a fact.
    """

    kind: Literal["history_compacted"] = "history_compacted"
    through_seq: int
    facts: dict[str, JsonValue]
    facts_hash: str
    window: int | None = Field(default=None, ge=1)
    summary: str = ""
    summary_trust: Literal["model_summary"] = "model_summary"

    @field_validator("facts", mode="before")
    @classmethod
    def _drop_open_commitments(cls, facts: Any) -> Any:
        """Facts compacted before ``WorkingState.open_commitments`` was removed carry it, empty."""
        return without_field(facts, "open_commitments")


class HandoffRequested(Envelope):
    """The run delegated work to a child run under a handoff contract of its manifest; the
    child's own ledger stream is ``child_run_id``."""

    kind: Literal["handoff_requested"] = "handoff_requested"
    handoff: str
    child_run_id: str
    step: str
    profile_id: str
    owner: str
    input: dict[str, JsonValue]
    budget: Budget
    """The child's limits: the contract's, narrowed to what the parent had left."""


class HandoffCompleted(Envelope):
    """The child produced output that fits the contract's output schema."""

    kind: Literal["handoff_completed"] = "handoff_completed"
    handoff: str
    child_run_id: str
    output: dict[str, JsonValue]


class HandoffRefused(Envelope):
    """No output came back: the delegation was not allowed, the child failed, exceeded its
    budget or time, returned output that fails the schema, or was cancelled with its parent.
    ``child_run_id`` is ``None`` when no child was started."""

    kind: Literal["handoff_refused"] = "handoff_refused"
    handoff: str
    child_run_id: str | None
    reason_code: str
    detail: str


class MemoryProposed(Envelope):
    kind: Literal["memory_proposed"] = "memory_proposed"
    memory_id: str
    category: str
    content: str
    evidence: tuple[str, ...] = ()


RunEvent = Annotated[
    RunStarted
    | RunCompleted
    | RunFailed
    | RunCancelled
    | RunForked
    | OperatorActionRefused
    | OperatorInstructed
    | ReplyTaken
    | StepStarted
    | ContextPacketBuilt
    | DecisionRecorded
    | DecisionRejected
    | ToolCallAuthorised
    | ToolCallDenied
    | ToolReceiptRecorded
    | EvidenceRecorded
    | ApprovalRequested
    | ApprovalGranted
    | ApprovalRejected
    | ApprovalExpired
    | ApprovalAttemptRefused
    | ApprovalNotified
    | ApprovalNotificationFailed
    | ErrorRecorded
    | BudgetCharged
    | ModelCalled
    | HistoryCompacted
    | MemoryProposed
    | ReplyAwaited
    | UserReplied
    | ReplyRefused
    | ConversationClosed
    | HandoffRequested
    | HandoffCompleted
    | HandoffRefused,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
EVENT_LIST_ADAPTER: TypeAdapter[list[RunEvent]] = TypeAdapter(list[RunEvent])

ENVELOPE_FIELDS = frozenset(Envelope.model_fields)
