"""Exactly what crosses the activity boundary: one input and one output model per activity.

Kept small on purpose: packets and full tool outputs stay in the ledger, history carries digests.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agentledger.domain.decisions import Answer, CallTool, ProceedToAnswer
from agentledger.domain.events import RunEvent
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import WorkOrder


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PrepareRunInput(_Message):
    run_id: str
    work_order: WorkOrder


class EligibleApproversInput(_Message):
    tenant_id: str
    role: str
    requested_by: str


class LookUpPrincipalInput(_Message):
    user_id: str


class DirectoryEntry(_Message):
    principal: Principal | None


class AppendInput(_Message):
    events: list[RunEvent]


class ModelStepInput(_Message):
    run_id: str
    step: str
    manifest_hash: str
    state: WorkingState
    now: datetime
    outbox: list[RunEvent] = Field(default_factory=list)


class PacketSummary(_Message):
    packet_hash: str
    cache_key: str
    section_tokens: dict[str, int]
    total_tokens: int
    omission_count: int
    included_ids: tuple[str, ...]
    citable_ids: tuple[str, ...] = ()


class TokenUsage(_Message):
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reported: bool = False


class ModelStepResult(_Message):
    """Either a parsed decision, a rejection of the model's output, or a refusal to build."""

    packet: PacketSummary | None = None
    decision: CallTool | ProceedToAnswer | Answer | None = Field(default=None, discriminator="type")
    rejection: str | None = None
    insufficient_context: str | None = None
    tokens_used: int = 0
    usage: TokenUsage | None = None


class ToolStepInput(_Message):
    run_id: str
    pack: str
    operation_id: str
    tool: str
    arguments: dict[str, JsonValue]
    idempotency_key: str | None
    principal: Principal
    now: datetime
    outbox: list[RunEvent] = Field(default_factory=list)
    manifest_hash: str = ""
    """Resolves tools the manifest pins (MCP) rather than the pack's own."""
    elicitation_answers: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)
    """Content a human approved for an MCP server's elicitation request, by request digest."""
