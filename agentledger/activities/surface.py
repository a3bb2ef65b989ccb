"""The activities a run calls, as the workflow sees them: names, inputs and results.

Each class declares its activities abstractly, with nothing behind them but pydantic messages and
domain types, so the workflow calls them by method reference (``RunSteps.model_step``: mypy
follows the call and its result type) without importing the ledger, SQLAlchemy or a provider.
The implementations (``RunActivities``, ``DirectoryActivities``, ``MemoryActivities``) subclass
these and register under the same names.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from temporalio import activity

from agentledger.activities.messages import (
    ActivityQueues,
    AppendInput,
    DirectoryEntry,
    EligibleApproversInput,
    ForkPointInput,
    HousekeepingDone,
    HousekeepingInput,
    LookUpPrincipalInput,
    ModelStepInput,
    ModelStepResult,
    NoticeInput,
    NoticeSent,
    PrepareRunInput,
    ProposedMemory,
    ProposeMemoryInput,
    PrunedLeftovers,
    ReconcileToolInput,
    ResumeInput,
    ToolStepInput,
)
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import Receipt


class RunSteps(ABC):
    @activity.defn(name="prepare_run")
    @abstractmethod
    def prepare_run(self, params: PrepareRunInput) -> ExecutionManifest:
        """Freeze the attempt's manifest (profile, tool terms, MCP pins, policy version)."""

    @activity.defn(name="activity_queues")
    @abstractmethod
    def activity_queues(self) -> ActivityQueues:
        """Where this deployment sends model and tool calls (run locally by the workflow's
        worker, whose configuration says)."""

    @activity.defn(name="resume_run")
    @abstractmethod
    def resume_run(self, params: ResumeInput) -> ExecutionManifest:
        """The run's manifest from the ledger, once the state carried across continue-as-new
        is shown to be the fold of the run's ledger: what a starter hands a new execution is
        never taken on its word."""

    @activity.defn(name="fork_point")
    @abstractmethod
    def fork_point(self, params: ForkPointInput) -> WorkingState:
        """A fork's first state: the original's at the fork point, read from its ledger, shown
        to be a completed-operation boundary and to hash as the fork's origin says."""

    @activity.defn(name="append_events")
    @abstractmethod
    def append_events(self, params: AppendInput) -> int:
        """Persist the outbox (idempotent on (run_id, seq)); the number of events appended."""

    @activity.defn(name="model_step")
    @abstractmethod
    def model_step(self, params: ModelStepInput) -> ModelStepResult:
        """Build the step's context packet, ask the model, parse its decision."""

    @activity.defn(name="execute_tool")
    @abstractmethod
    def execute_tool(self, params: ToolStepInput) -> Receipt:
        """Run an authorised call (a write reconciled by its idempotency key first)."""

    @activity.defn(name="reconcile_tool")
    @abstractmethod
    def reconcile_tool(self, params: ReconcileToolInput) -> Receipt:
        """Ask the system of record what became of a call whose outcome was lost."""


class DirectorySteps(ABC):
    @activity.defn(name="eligible_approvers")
    @abstractmethod
    def eligible_approvers(self, params: EligibleApproversInput) -> list[str]:
        """Who in the tenant holds the approver role (the requester excluded)."""

    @activity.defn(name="look_up_principal")
    @abstractmethod
    def look_up_principal(self, params: LookUpPrincipalInput) -> DirectoryEntry:
        """An approver's directory entry, read when they decide."""


class MemorySteps(ABC):
    @activity.defn(name="propose_memory")
    @abstractmethod
    def propose_memory(self, params: ProposeMemoryInput) -> list[ProposedMemory]:
        """Persist the outbox, then admit the run's memory proposals (quarantine first)."""


class HousekeepingSteps(ABC):
    @activity.defn(name="expire_memories")
    @abstractmethod
    def expire_memories(self, params: HousekeepingInput) -> HousekeepingDone:
        """Expire every published memory past its ``expires_at`` (recorded as ``expired``)."""


class LeftoverSteps(ABC):
    @activity.defn(name="prune_ended_runs")
    @abstractmethod
    def prune_ended_runs(self, params: HousekeepingInput) -> PrunedLeftovers:
        """Drop what runs ended longer ago than the worker keeps left beside their logs:
        answer streams, fork sandboxes."""


class NoticeSteps(ABC):
    @activity.defn(name="notify_approval")
    @abstractmethod
    def notify_approval(self, notice: NoticeInput) -> NoticeSent:
        """Announce a pending approval on one of the manifest's channels (retried by Temporal;
        a channel that refuses the message fails at once)."""
