"""Candidates the run's own state already holds: the request, evidence, unresolved errors.

Callers add tool observations and memories themselves; this function fetches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import get_args

from pydantic import JsonValue

from agentledger.domain.context.items import ContextItem, TrustLevel
from agentledger.domain.state import (
    ApprovalOutcome,
    EvidenceRef,
    OperatorInstruction,
    Turn,
    UnresolvedError,
    WorkingState,
)
from agentledger.domain.workorder import WorkOrder

_TRUST_LEVELS: dict[str, TrustLevel] = {t: t for t in get_args(TrustLevel)}


def candidates_from_state(
    state: WorkingState, instructions: Sequence[ContextItem], now: datetime
) -> list[ContextItem]:
    """Instructions as given, then the user's request, evidence, unresolved errors, the
    conversation's turns, operators' instructions and the approvers' amendments."""
    since = state.started_at or now
    tenant = state.work_order.principal.tenant_id if state.work_order else None
    items = list(instructions)
    if state.work_order is not None:
        items.append(request_item(state.run_id, state.work_order, since))
    items.extend(_evidence(ref, tenant, since) for ref in state.evidence)
    errors = sorted(state.unresolved_errors.items())
    items.extend(_error(state.run_id, e, tenant, since) for _, e in errors)
    items.extend(_turn(state.run_id, turn, tenant) for turn in state.conversation)
    items.extend(_instruction(state.run_id, said, tenant) for said in state.operator_instructions)
    edited = sorted((a for a in state.approvals.values() if a.edit), key=lambda a: a.approval_id)
    items.extend(_amendment(state.run_id, a, tenant, since) for a in edited)
    return items


def _instruction(run_id: str, said: OperatorInstruction, tenant: str | None) -> ContextItem:
    """What an operator told the run: above a customer's claims, below the pack's instructions
    (a marked block like all data: it informs the model and grants it nothing)."""
    return ContextItem.make(
        id=f"operator:{said.seq}",
        kind="operator_instruction",
        content={"operator": said.instructed_by, "text": said.text},
        source=f"run:{run_id}",
        trust_level="operator_instruction",
        created_at=said.at,
        tenant_id=tenant,
        title=f"Instruction from operator {said.instructed_by}",
    )


def _amendment(
    run_id: str, outcome: ApprovalOutcome, tenant: str | None, since: datetime
) -> ContextItem:
    """An approver changed a proposed call: a verified fact of the run (the signed grant says
    so), not a claim, so the model does not propose the original again or misreport what ran."""
    assert outcome.edit is not None
    changes: list[JsonValue] = [c.model_dump(mode="json") for c in outcome.edit.changes]
    return ContextItem.make(
        id=f"amendment:{outcome.approval_id}",
        kind="verified_fact",
        content={
            "approval_id": outcome.approval_id,
            "approved_by": outcome.decided_by,
            "approved_arguments": outcome.edit.approved,
            "changes": changes,
        },
        source=f"run:{run_id}",
        trust_level="verified_fact",
        created_at=since,
        tenant_id=tenant,
        title=f"Approval {outcome.approval_id} approved an edited call",
    )


def request_item(run_id: str, order: WorkOrder, since: datetime) -> ContextItem:
    """The request is a user claim: data to act on, never an instruction to obey."""
    return ContextItem.make(
        id=f"request:{run_id}",
        kind="user_request",
        content={"text": order.request_text, "user_id": order.principal.user_id},
        source="work_order",
        trust_level="user_claim",
        created_at=since,
        tenant_id=order.principal.tenant_id,
        title="User request",
    )


def _evidence(ref: EvidenceRef, tenant: str | None, since: datetime) -> ContextItem:
    # An unknown trust label is treated as untrusted; a policy passage then needs approval to enter.
    trust = _TRUST_LEVELS.get(ref.trust, "untrusted")
    return ContextItem.make(
        id=ref.source_id,
        kind="policy_passage",
        content=ref.text,
        source=ref.source_id,
        trust_level=trust,
        created_at=since,
        revision=ref.revision,
        content_hash=ref.content_hash,
        tenant_id=tenant,
        title=ref.title,
    )


def _error(run_id: str, error: UnresolvedError, tenant: str | None, since: datetime) -> ContextItem:
    return ContextItem.make(
        id=f"error:{error.error_id}",
        kind="unresolved_error",
        content={"code": error.code, "message": error.message, "operation_id": error.operation_id},
        source=f"run:{run_id}",
        trust_level="tool_observation",
        created_at=since,
        tenant_id=tenant,
        title=f"Unresolved error {error.code}",
    )


def _turn(run_id: str, turn: Turn, tenant: str | None) -> ContextItem:
    """A message of the conversation: the customer's are claims, the agent's its own words."""
    return ContextItem.make(
        id=f"turn:{turn.seq}",
        kind="conversation_turn",
        content={"role": turn.role, "text": turn.text},
        source=f"run:{run_id}",
        trust_level="user_claim" if turn.role == "user" else "model_summary",
        created_at=turn.at,
        tenant_id=tenant,
        title="Customer" if turn.role == "user" else "Agent",
    )
