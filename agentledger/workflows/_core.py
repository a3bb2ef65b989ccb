"""What every part of a run shares: its recording (state and outbox) and the attempt's manifest.

The workflow records events; which events follow what is decided in ``domain.steps``. Each event
is folded into WorkingState the moment it is recorded (there is no second, mutable copy of
state), and the not-yet-persisted ones ride in an outbox on the next activity call, so the ledger
append adds no round trip of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from temporalio import workflow
from temporalio.common import Priority, RetryPolicy
from temporalio.exceptions import ActivityError

from agentledger.workflows import _patches as patches

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import ActivityQueues, AppendInput
    from agentledger.activities.surface import RunSteps
    from agentledger.domain import events as ev
    from agentledger.domain.decisions import ToolCallProposal
    from agentledger.domain.envelope import Stamp
    from agentledger.domain.governance import Authorization, authorize
    from agentledger.domain.manifest import ExecutionManifest
    from agentledger.domain.manifest_parts import with_shared_parts
    from agentledger.domain.principal import Principal
    from agentledger.domain.state import WorkingState
    from agentledger.domain.steps import Recording
    from agentledger.domain.tools import Governed
    from agentledger.domain.workorder import WorkOrder
    from agentledger.workflows import recorded_contracts

MODEL_TIMEOUT = timedelta(seconds=60)
MODEL_HEARTBEAT = timedelta(seconds=10)
"""The model step heartbeats while its call runs (``activities.run.answers.heartbeating``):
a worker that dies mid-answer is known dead after this, and the step is retried."""
LOCAL_TIMEOUT = timedelta(seconds=10)
"""A local activity that reads the worker's own configuration."""
RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
)
# Model calls: Temporal owns retries (provider SDK retries are off); a configuration error or a
# rejected request is final, and a provider that stays down ends the run instead of looping.
MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
    non_retryable_error_types=["ModelConfigError", "ModelRequestRejected", "UnknownModelProvider"],
)
# A write nothing can reconcile (an MCP tool) is attempted once: a retry could repeat it.
ONCE = RetryPolicy(maximum_attempts=1)


class Run:
    """One run as its workflow sees it: the recording, and the manifest it runs under."""

    def __init__(self) -> None:
        self.rec = Recording(run_id=workflow.info().workflow_id)
        self._manifest: ExecutionManifest | None = None
        self.contracts: Mapping[str, Governed] = {}
        self.queues = ActivityQueues()
        self._unconfirmed: list[ev.RunEvent] = []
        self.cancel: ev.RunCancelled | None = None
        """An operator's accepted cancel, recorded (stamped anew) at the run's next safe point:
        waits wake for it and no consequential call starts once it is set."""

    @property
    def state(self) -> WorkingState:
        return self.rec.state

    @property
    def fair_share(self) -> Priority:
        """The run's model and tool tasks are dispatched fairly between tenants (Temporal's
        fairness keys): a burst of one tenant's runs queues behind nobody else's."""
        order = self.state.work_order
        return Priority(fairness_key=order.principal.tenant_id[:64] if order else None)

    @property
    def cancelled(self) -> bool:
        """An operator's cancel was accepted: the run ends at its next safe point."""
        return self.cancel is not None

    @property
    def interrupted(self) -> bool:
        """A customer's message waits to interrupt (double-texting ``interrupt``): the run
        takes it at its next safe point and acts on nothing it decided before."""
        policy = self._manifest.conversation if self._manifest is not None else None
        return (
            policy is not None
            and policy.double_texting == "interrupt"
            and bool(self.state.queued_replies)
            and self.state.awaiting is None
            and self.state.status == "running"
        )

    @property
    def stopping(self) -> bool:
        """Cancelled, or interrupted: waits wake, and nothing decided before starts."""
        return self.cancelled or self.interrupted

    def pin_manifest(self, manifest: ExecutionManifest, pack: str) -> None:
        """The attempt's manifest, and the tool terms it froze (for a run prepared before
        manifests froze them, its pack's contracts as deployed: that is how it ran). Held with
        the parts it has in common with other runs' shared (``with_shared_parts``): a worker
        keeps many runs cached."""
        manifest = with_shared_parts(manifest)
        self._manifest, self.rec.manifest_hash = manifest, manifest.hash
        self.contracts = manifest.terms or manifest.tool_contracts(
            recorded_contracts.contracts_of(pack)
        )

    @property
    def manifest(self) -> ExecutionManifest:
        assert self._manifest is not None
        return self._manifest

    @property
    def manifest_or_none(self) -> ExecutionManifest | None:
        """``None`` for a run refused before it was prepared."""
        return self._manifest

    @property
    def manifest_hash(self) -> str:
        return self.rec.manifest_hash

    def stamp(self) -> Stamp:
        return self.rec.stamp(workflow.now())

    def record(self, event: ev.RunEvent) -> None:
        self.rec.add(event)

    def authorization(
        self, step: str, proposal: ToolCallProposal, operation_id: str
    ) -> Authorization:
        """The authority gate's verdict on ``proposal`` as ``operation_id`` of ``step``, now."""
        return authorize(
            proposal,
            self.state,
            self.manifest,
            self.principal,
            workflow.now(),
            contracts=self.contracts,
            step=step,
            operation_id=operation_id,
            bounds_with_defaults=_bounds_with_defaults(self.state),
        )

    def expire_pending(self) -> None:
        """Approvals still pending leave the inbox as the run ends: nothing can use them."""
        for approval_id in self.state.pending_approvals:
            self.record(ev.ApprovalExpired(**self.stamp(), approval_id=approval_id))

    def fail(self, reason_code: str, message: str) -> None:
        self.rec.fail(workflow.now(), reason_code, message)

    def take_outbox(self) -> list[ev.RunEvent]:
        """The events the next activity appends: every one not yet confirmed stored, then the
        new ones. An update's flush may run while the main loop's activity (or a killed
        worker's, waiting for its retry) still carries earlier events: sending those again
        (appends are idempotent) keeps every append in order, and the ledger refuses one that
        is not (``LedgerGap``)."""
        new = self.rec.take_outbox()
        if not self._in_order():
            return new
        self._unconfirmed.extend(new)
        return list(self._unconfirmed)

    def confirm(self, carried: list[ev.RunEvent]) -> None:
        """An activity that carried ``carried`` completed: they, and all before them, are stored."""
        if carried:
            landed = max(e.seq for e in carried)
            self._unconfirmed = [e for e in self._unconfirmed if e.seq > landed]

    def resend(self, outbox: list[ev.RunEvent]) -> None:
        """Events an activity carried that may not have landed go out again with the next one
        (appends are idempotent); in order, they are still unconfirmed and go out anyway."""
        if not self._in_order():
            self.rec.outbox = outbox + self.rec.outbox

    def _in_order(self) -> bool:
        return workflow.patched(patches.APPEND_IN_ORDER)

    @property
    def unsent(self) -> bool:
        """Events recorded but not yet confirmed stored."""
        return bool(self.rec.outbox or self._unconfirmed)

    async def flush(self) -> None:
        if not self.unsent:
            return
        events = AppendInput(events=self.take_outbox())
        # A regular activity, not a local one: its input is fixed in history by the workflow
        # task that emitted the events. A local activity commits inside a task that a crashed
        # worker may never complete; the retried task then re-emits those events with a new
        # workflow.now() and the ledger (rightly) refuses the different payload forever.
        if workflow.patched(patches.FLUSH_AS_ACTIVITY):
            await workflow.execute_activity_method(
                RunSteps.append_events,
                events,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RETRY,
            )
        else:  # runs recorded before this change replay as they ran
            await workflow.execute_local_activity_method(
                RunSteps.append_events,
                events,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RETRY,
            )
        self.confirm(events.events)

    def history_too_long(self) -> bool:
        """Past the manifest's compaction thresholds (events or bytes of this execution)."""
        info, policy = workflow.info(), self.manifest.compaction
        return (
            info.get_current_history_length() > policy.max_history_events
            or info.get_current_history_size() > policy.max_history_bytes
        )

    @property
    def work_order(self) -> WorkOrder:
        assert self.rec.state.work_order is not None
        return self.rec.state.work_order

    @property
    def principal(self) -> Principal:
        return self.work_order.principal


def _bounds_with_defaults(state: WorkingState) -> bool:
    # Asked only where bounds exist: other runs' histories carry no marker for it.
    order = state.work_order
    if order is None or not order.grants:
        return True
    return workflow.patched(patches.BOUNDS_WITH_DEFAULTS)


def cause(exc: ActivityError) -> str:
    """``Type: message`` of the activity's own error, as events and people should read it."""
    found = exc.cause
    return f"{getattr(found, 'type', None) or 'error'}: {getattr(found, 'message', None) or exc}"
