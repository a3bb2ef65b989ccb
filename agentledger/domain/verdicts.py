"""What the authority gate answers (``domain.governance.authorize``): allow the call as
recorded, deny it with a typed reason, or hold it for a person's approval."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.principal import APPROVER_ROLE


class AuthorisedCall(Frozen):
    """A call the gate allowed, exactly as it will run: ``Allow`` carries it out of the gate,
    and ``ToolCallAuthorised`` records it (``domain.verdict_events.authorised``)."""

    tool: str
    tool_version: str
    arguments: dict[str, JsonValue]
    arguments_digest: str
    idempotency_key: str | None
    approval_id: str | None = None


class Allow(AuthorisedCall):
    kind: Literal["allow"] = "allow"


class Deny(Frozen):
    kind: Literal["deny"] = "deny"
    reason_code: str
    detail: str
    protocol_error: bool = False


class NeedsApproval(Frozen):
    kind: Literal["needs_approval"] = "needs_approval"
    proposal: ToolCallProposal
    proposal_digest: str
    approver_role: str = APPROVER_ROLE


Authorization = Allow | Deny | NeedsApproval
