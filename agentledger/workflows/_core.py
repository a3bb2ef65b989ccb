"""What every part of a run shares: its state, the event outbox and the attempt's manifest.

The workflow is the only author of events. ``_emit`` folds each event into WorkingState the
moment it is emitted (there is no second, mutable copy of state) and keeps the not-yet-persisted
ones in an outbox that rides on the next activity call, so the ledger append adds no round trip
of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    # Pure domain code and pydantic models: safe to share with the sandbox, and re-importing
    # pydantic per workflow run would cost far more than the run itself.
    from agentledger.activities.messages import AppendInput
    from agentledger.domain import events as ev
    from agentledger.domain.fold import evolve
    from agentledger.domain.manifest import ExecutionManifest
    from agentledger.domain.principal import Principal
    from agentledger.domain.state import WorkingState
    from agentledger.domain.tools import Governed
    from agentledger.domain.workorder import WorkOrder
    from agentledger.workflows import recorded_contracts

MODEL_TIMEOUT = timedelta(seconds=60)
RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
)
# A write nothing can reconcile (an MCP tool) is attempted once: a retry could repeat it.
ONCE = RetryPolicy(maximum_attempts=1)


class RunCore:
    def __init__(self) -> None:
        self._state = WorkingState()
        self._outbox: list[ev.RunEvent] = []
        self._manifest: ExecutionManifest | None = None
        self._manifest_hash = ""
        self._contracts: Mapping[str, Governed] = {}

    def _pin_manifest(self, manifest: ExecutionManifest, pack: str) -> None:
        """The attempt's manifest, and the tool terms it froze (for a run prepared before
        manifests froze them, its pack's contracts as deployed: that is how it ran)."""
        self._manifest, self._manifest_hash = manifest, manifest.hash
        self._contracts = manifest.terms or manifest.tool_contracts(
            recorded_contracts.contracts_of(pack)
        )

    def _emit(self, kind: type[ev.Envelope], **fields: Any) -> None:
        event = kind(
            run_id=self._state.run_id or workflow.info().workflow_id,
            seq=self._state.last_seq + 1,
            recorded_at=workflow.now(),
            manifest_hash=self._manifest_hash,
            **fields,
        )
        self._state = evolve(self._state, event)  # type: ignore[arg-type]
        self._outbox.append(event)  # type: ignore[arg-type]

    def _take_outbox(self) -> list[ev.RunEvent]:
        taken, self._outbox = self._outbox, []
        return taken

    async def _flush(self) -> None:
        if not self._outbox:
            return
        events = AppendInput(events=self._take_outbox())
        # A regular activity, not a local one: its input is fixed in history by the workflow
        # task that emitted the events. A local activity commits inside a task that a crashed
        # worker may never complete; the retried task then re-emits those events with a new
        # workflow.now() and the ledger (rightly) refuses the different payload forever.
        if workflow.patched("flush-as-activity"):
            await workflow.execute_activity(
                "append_events",
                events,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RETRY,
            )
        else:  # runs recorded before this change replay as they ran
            await workflow.execute_local_activity(
                "append_events",
                events,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RETRY,
            )

    def _manifest_(self) -> ExecutionManifest:
        assert self._manifest is not None
        return self._manifest

    def _work_order(self) -> WorkOrder:
        assert self._state.work_order is not None
        return self._state.work_order

    def _principal(self) -> Principal:
        return self._work_order().principal


def cause(exc: ActivityError) -> str:
    """``Type: message`` of the activity's own error, as events and people should read it."""
    found = exc.cause
    return f"{getattr(found, 'type', None) or 'error'}: {getattr(found, 'message', None) or exc}"
