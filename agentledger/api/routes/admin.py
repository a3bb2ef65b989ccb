"""Policy documents (add a draft revision, approve one), subjects' erasure and the API's own
denial log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from agentledger.api import actions
from agentledger.api.deps import POLICY_APPROVER_ROLE, Ctx, Who, require_role, require_tenant
from agentledger.api.problems import PROBLEM_RESPONSES, ApiProblem, refusal_problem
from agentledger.app.erasure import ERASER_ROLE, erase
from agentledger.app.errors import NotFound, Refused

router = APIRouter(prefix="/api", tags=["policies"], responses=PROBLEM_RESPONSES)
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][\w.\-]*$")]


class NewRevision(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    document_id: Name
    revision: Name
    tenant_id: str | None = Field(None, min_length=1, max_length=200)
    """Default: the caller's tenant."""
    markdown: str = Field(min_length=1, max_length=60_000)
    effective_from: datetime | None = None


@router.post("/policies", status_code=201, summary="Add a policy revision (a draft)")
def add_policy(ctx: Ctx, caller: Who, body: NewRevision) -> dict[str, Any]:
    tenant = body.tenant_id or caller.principal.tenant_id
    target = f"{body.document_id}@{body.revision}"
    require_role(ctx, caller, POLICY_APPROVER_ROLE, "add_policy", target)
    require_tenant(ctx, caller, tenant, "add_policy")
    doc = actions.add_policy(
        ctx,
        caller,
        document_id=body.document_id,
        revision=body.revision,
        tenant_id=tenant,
        markdown=body.markdown,
        effective_from=body.effective_from,
    )
    return doc.model_dump(mode="json")


@router.get("/policies/{document_id}", summary="A policy's revisions in the caller's tenant")
def policy_revisions(ctx: Ctx, caller: Who, document_id: Name) -> dict[str, Any]:
    docs = actions.policy_revisions(ctx, caller.principal.tenant_id, document_id)
    return {"revisions": [d.model_dump(mode="json") for d in docs]}


@router.post(
    "/policies/{document_id}/revisions/{revision}/approve",
    summary="Approve a revision (role policy_approver): it becomes searchable from its date",
)
def approve_policy(ctx: Ctx, caller: Who, document_id: Name, revision: Name) -> dict[str, Any]:
    target = f"{document_id}@{revision}"
    require_role(ctx, caller, POLICY_APPROVER_ROLE, "approve_policy", target)
    doc = actions.approve_policy(ctx, caller, caller.principal.tenant_id, document_id, revision)
    return doc.model_dump(mode="json")


@router.get("/denials", summary="Refusals the API recorded in the caller's tenant", tags=["audit"])
def denials(ctx: Ctx, caller: Who) -> dict[str, Any]:
    require_role(ctx, caller, "approver", "read_denials", caller.principal.tenant_id)
    found = ctx.denials.recent(caller.principal.tenant_id)
    return {"denials": [d.__dict__ for d in found]}


class ErasureBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reason: str = Field(min_length=1, max_length=500)


@router.post(
    "/subjects/{subject_id}/erasure",
    summary="Erase a subject of the caller's tenant (role eraser): runs cancelled, content "
    "shredded, Temporal histories deleted; the log's kinds and digests stay to verify",
)
async def erase_subject(ctx: Ctx, caller: Who, subject_id: Name, body: ErasureBody) -> Any:
    require_role(ctx, caller, ERASER_ROLE, "erase_subject", subject_id)
    try:
        done = await erase(
            ctx.client, ctx.ledger, subject_id, by=caller.principal, reason=body.reason,
            register=ctx.erasure_register,
        )  # fmt: skip
    except NotFound as exc:
        raise ApiProblem(404, "unknown-subject", str(exc)) from None
    except Refused as exc:
        raise refusal_problem(exc) from None
    return {
        "erasure_id": done.erasure_id,
        "runs": {run_id: done.verified[run_id] for run_id in done.runs},
        "cancelled": list(done.cancelled),
        "refused": list(done.refused),
        "schedules_deleted": list(done.schedules),
        "affected": done.affected,
        "by": caller.subject,
    }
