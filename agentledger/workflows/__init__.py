"""Temporal orchestration: the run loop, approvals over updates, timers and queries."""

from agentledger.workflows.agent_run import AgentRunWorkflow
from agentledger.workflows.messages import (
    ApprovalDecision,
    ApprovalResult,
    Continuation,
    Reply,
    ReplyResult,
    RunInput,
    RunOutcome,
)

__all__ = [
    "AgentRunWorkflow",
    "ApprovalDecision",
    "ApprovalResult",
    "Continuation",
    "Reply",
    "ReplyResult",
    "RunInput",
    "RunOutcome",
]
