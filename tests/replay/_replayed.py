"""What the current workflow code does when it replays a history, seen through interceptors.

During replay the workflow re-emits every event and hands it to the same activity calls it made
when recording; the outbound interceptor sees those inputs (the history itself is not consulted),
and the inbound one reads the workflow's in-memory state once its run method returns or
continues as new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import (
    ContinueAsNewInput,
    ExecuteWorkflowInput,
    Interceptor,
    StartActivityInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from agentledger.activities.messages import ModelStepInput
from agentledger.app.replayer import replayer
from agentledger.domain.events import RunEvent
from agentledger.domain.state import WorkingState
from agentledger.workflows.messages import Continuation


@dataclass
class ReplayedRun:
    replay_failure: Exception | None = None
    events: list[RunEvent] = field(default_factory=list)
    """In the order sent, through regular activities (a resent outbox appears twice)."""
    local_flushes: list[list[RunEvent]] = field(default_factory=list)
    model_step_inputs: list[ModelStepInput] = field(default_factory=list)
    """What each ``model_step`` was sent, in order (the state is the one thing a step reads)."""
    final_state: WorkingState | None = None
    continued_as_new: Continuation | None = None


class _Capture(Interceptor):
    def __init__(self, run: ReplayedRun) -> None:
        self.run = run

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        run = self.run

        class Outbound(WorkflowOutboundInterceptor):
            def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
                run.events.extend(_events_in(input.args))
                if input.activity == "model_step":
                    run.model_step_inputs.append(input.args[0])
                return super().start_activity(input)

            def start_local_activity(
                self, input: StartLocalActivityInput
            ) -> workflow.ActivityHandle[Any]:
                if input.activity == "append_events":  # not the deployment's queues
                    run.local_flushes.append(_events_in(input.args))
                return super().start_local_activity(input)

            def continue_as_new(self, input: ContinueAsNewInput) -> NoReturn:
                run.continued_as_new = input.args[0].continued
                super().continue_as_new(input)

        class Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(Outbound(outbound))

            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                try:
                    return await super().execute_workflow(input)
                finally:  # also when it raises ContinueAsNewError
                    run.final_state = workflow.instance().state()

        return Inbound


def _events_in(args: Any) -> list[RunEvent]:
    (message,) = args
    return list(getattr(message, "outbox", None) or getattr(message, "events", None) or [])


async def replay(path: Path, workflow_id: str) -> ReplayedRun:
    """Replay ``path`` as the workflow id it ran under: the first event takes its run_id
    from it, so a different id (the file name, say) changes what the run emits."""
    run = ReplayedRun()
    result = await replayer(interceptors=[_Capture(run)]).replay_workflow(
        WorkflowHistory.from_json(workflow_id, path.read_text()), raise_on_replay_failure=False
    )
    run.replay_failure = result.replay_failure
    return run
