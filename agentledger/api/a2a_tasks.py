"""A run as an A2A task: its state, the message that goes with it, and its answer."""

from __future__ import annotations

from collections.abc import Sequence

from a2a.types import a2a_pb2 as pb

from agentledger.activities.ledger import RunRow
from agentledger.domain.events import RunEvent, RunFailed
from agentledger.domain.fold import project
from agentledger.domain.state import WorkingState


def task_of(row: RunRow, events: Sequence[RunEvent]) -> pb.Task:
    """The task a run is: its id the run id, its state where the run is."""
    state = project(events) if events else None
    status = pb.TaskStatus(state=_state(row, state, events))
    said = _said(row, state, events, status.state)
    if said:
        status.message.CopyFrom(_agent_message(row.run_id, said))
    task = pb.Task(id=row.run_id, context_id=row.run_id, status=status)
    if row.answer is not None and status.state == pb.TASK_STATE_COMPLETED:
        task.artifacts.append(
            pb.Artifact(
                artifact_id=f"{row.run_id}.answer",
                name="answer",
                parts=[pb.Part(text=row.answer, media_type="text/plain")],
            )
        )
    return task


def _state(row: RunRow, state: WorkingState | None, events: Sequence[RunEvent]) -> pb.TaskState:
    if state is None:
        return pb.TASK_STATE_SUBMITTED
    if state.status == "completed":
        return pb.TASK_STATE_COMPLETED
    if state.status == "failed":
        failed = _failure(events)
        cancelled = failed is not None and failed.reason_code == "cancelled"
        return pb.TASK_STATE_CANCELED if cancelled else pb.TASK_STATE_FAILED
    if state.pending_approvals:
        return pb.TASK_STATE_AUTH_REQUIRED
    if state.awaiting is not None:
        return pb.TASK_STATE_INPUT_REQUIRED
    return pb.TASK_STATE_WORKING


def _said(
    row: RunRow, state: WorkingState | None, events: Sequence[RunEvent], task_state: pb.TaskState
) -> str | None:
    """What the agent tells the caller with the state: the question or latest answer it waits
    behind, who must approve what, or why it failed."""
    if state is None:
        return None
    if task_state == pb.TASK_STATE_INPUT_REQUIRED and state.conversation:
        return state.conversation[-1].text
    if task_state == pb.TASK_STATE_AUTH_REQUIRED:
        asked = ", ".join(
            f"{a.proposal.tool} ({a.approval_id})" for a in state.pending_approvals.values()
        )
        return f"waiting for a person to approve {asked}"
    if task_state in (pb.TASK_STATE_FAILED, pb.TASK_STATE_CANCELED):
        failed = _failure(events)
        return f"{failed.reason_code}: {failed.message}" if failed else row.failure_reason
    return None


def _failure(events: Sequence[RunEvent]) -> RunFailed | None:
    return next((e for e in reversed(events) if isinstance(e, RunFailed)), None)


def _agent_message(run_id: str, text: str) -> pb.Message:
    return pb.Message(
        message_id=f"{run_id}.status",
        context_id=run_id,
        task_id=run_id,
        role=pb.ROLE_AGENT,
        parts=[pb.Part(text=text)],
    )
