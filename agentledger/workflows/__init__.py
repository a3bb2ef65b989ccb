"""Temporal orchestration: the run loop, approvals over updates, timers and queries."""

from agentledger.workflows._approvals import ApprovalDecision, ApprovalResult
from agentledger.workflows._conversation import Reply, ReplyResult
from agentledger.workflows.agent_run import AgentRunWorkflow, Continuation, RunInput, RunOutcome

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
