"""Every side effect of a run: manifests, model steps, tool calls and ledger appends, one
module per activity under ``activities/run/`` (``prepare``, ``model_step``, ``tools``) over a
shared base; ``RunActivities`` composes them into the workers' ``RunSteps``.

Each activity first persists the workflow's outbox (idempotent on (run_id, seq)), so appending
events rides on a round trip the step needs anyway. All are safe to retry.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import activity

from agentledger.activities.messages import AppendInput
from agentledger.activities.run.fork import Forking
from agentledger.activities.run.model_step import ModelStepping
from agentledger.activities.run.prepare import Preparing
from agentledger.activities.run.tools import ToolCalling
from agentledger.activities.surface import RunSteps


class RunActivities(Preparing, Forking, ModelStepping, ToolCalling, RunSteps):
    """The run's activities bound to one ledger and the installed packs and models (the
    constructor is ``RunBase``'s)."""

    def all(self) -> list[Callable[..., object]]:
        return [
            self.prepare_run,
            self.activity_queues,
            self.resume_run,
            self.fork_point,
            self.model_step,
            self.execute_tool,
            self.reconcile_tool,
            self.append_events,
        ]

    @activity.defn(name="append_events")
    def append_events(self, params: AppendInput) -> int:
        return self._append(params.events)
