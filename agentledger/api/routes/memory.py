"""The memory review queue: what waits for a person before it may be remembered, and the
curator's verbs (approve, reject, correct, delete with its receipt).

The memory store applies the domain's lifecycle rules (only a ``memory_curator`` of the
record's tenant approves; owners or curators correct and delete); a refused transition is a
typed ``403``/``409`` in the domain's words. Another tenant's memory is ``404``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agentledger.activities.memory import MemoryNotFound, MemoryStore, install
from agentledger.api.auth import Caller
from agentledger.api.deps import ApiContext, Ctx, Who
from agentledger.api.problems import PROBLEM_RESPONSES, ApiProblem, not_found
from agentledger.domain.memory import Admission, MemoryProposal, MemoryRecord, Refused

router = APIRouter(prefix="/api/memory", tags=["memory"], responses=PROBLEM_RESPONSES)
MemoryId = Annotated[str, Field(min_length=1, max_length=120)]
_NOT_ALLOWED = {
    "not_a_curator",
    "correction_not_allowed",
    "deletion_not_allowed",
    "revocation_not_allowed",
    "write_not_allowed",
}


class Reason(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reason: str = Field(min_length=1, max_length=2_000)


class Correction(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    content: dict[str, JsonValue]


def _store(ctx: ApiContext) -> MemoryStore:
    install(ctx.ledger.engine)
    return MemoryStore.of(ctx.ledger)


def _record(ctx: ApiContext, caller: Caller, memory_id: str) -> MemoryRecord:
    found = _store(ctx).get(memory_id)
    if found is None or found.scope.tenant_id != caller.principal.tenant_id:
        raise not_found(f"memory {memory_id}")
    return found


def _refusal(refused: Refused) -> ApiProblem:
    status = 403 if refused.code in _NOT_ALLOWED else 409
    return ApiProblem(
        status, refused.code.replace("_", "-"), refused.detail, reason_code=refused.code
    )


def _admitted(admission: Admission) -> dict[str, Any]:
    if admission.refused is not None:
        raise _refusal(admission.refused)
    record = admission.record
    return {"memory": record.model_dump(mode="json") if record else None}


@router.get("/queue", summary="Memories of the caller's tenant held for review")
def queue(ctx: Ctx, caller: Who) -> dict[str, Any]:
    held = _store(ctx).awaiting_review(caller.principal.tenant_id)
    return {"memories": [m.model_dump(mode="json") for m in held]}


@router.post("/{memory_id}/approve", summary="Approve and publish (role memory_curator)")
def approve(ctx: Ctx, caller: Who, memory_id: MemoryId) -> dict[str, Any]:
    _record(ctx, caller, memory_id)
    now = datetime.now(UTC)
    try:
        return _admitted(_store(ctx).approve(memory_id, caller.principal, now))
    except MemoryNotFound:
        raise not_found(f"memory {memory_id}") from None


@router.post("/{memory_id}/reject", summary="Reject: revoke it with a reason")
def reject(ctx: Ctx, caller: Who, memory_id: MemoryId, body: Reason) -> dict[str, Any]:
    _record(ctx, caller, memory_id)
    refused = _store(ctx).revoke(memory_id, caller.principal, body.reason, datetime.now(UTC))
    if refused is not None:
        raise _refusal(refused)
    return {"memory": _record(ctx, caller, memory_id).model_dump(mode="json")}


@router.post("/{memory_id}/correct", summary="Supersede it with corrected content")
def correct(ctx: Ctx, caller: Who, memory_id: MemoryId, body: Correction) -> dict[str, Any]:
    old = _record(ctx, caller, memory_id)
    replacement = MemoryProposal(
        memory_id=f"{memory_id[:100]}_c{len(_store(ctx).history(memory_id))}",
        category=old.category,
        content=body.content,
        scope=old.scope,
        writer="curator",
        source=f"principal:{caller.principal.user_id}",
        trust=old.trust,
        evidence=old.evidence,
        sensitivity=old.sensitivity,
        expires_at=old.expires_at,
        supersedes=memory_id,
    )
    return _admitted(
        _store(ctx).correct(memory_id, replacement, caller.principal, datetime.now(UTC))
    )


@router.delete("/{memory_id}", summary="Forget it everywhere it was used; returns the receipt")
def delete(ctx: Ctx, caller: Who, memory_id: MemoryId) -> dict[str, Any]:
    _record(ctx, caller, memory_id)
    outcome = _store(ctx).delete(memory_id, caller.principal, datetime.now(UTC))
    if isinstance(outcome, Refused):
        raise _refusal(outcome)
    return {"receipt": outcome.model_dump(mode="json")}
