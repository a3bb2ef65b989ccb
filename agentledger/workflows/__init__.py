"""Temporal orchestration: the run loop, approvals over updates, timers and queries."""

from agentledger.workflows.agent_run import AgentRunWorkflow
from agentledger.workflows.messages import (
    ApprovalDecision,
    ApprovalResult,
    CancelOrder,
    CancelResult,
    Continuation,
    Reply,
    ReplyResult,
    RunInput,
    RunOutcome,
    ScheduledRunInput,
    SteerOrder,
    SteerResult,
)
from agentledger.workflows.scheduled import (
    SCHEDULED_RUN,
    ScheduledRunWorkflow,
    scheduled_run_id,
)

__all__ = [
    "SCHEDULED_RUN",
    "AgentRunWorkflow",
    "ApprovalDecision",
    "ApprovalResult",
    "CancelOrder",
    "CancelResult",
    "Continuation",
    "Reply",
    "ReplyResult",
    "RunInput",
    "RunOutcome",
    "ScheduledRunInput",
    "ScheduledRunWorkflow",
    "SteerOrder",
    "SteerResult",
    "scheduled_run_id",
]
