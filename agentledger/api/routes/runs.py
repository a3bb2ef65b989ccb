"""The JSON API over runs: list and filter, one run's timeline, state, packets, receipts and
approvals; start a run, reply to it, decide its approvals."""

from __future__ import annotations

import asyncio
import base64
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictBool

from agentledger.activities.ledger import RunFilter
from agentledger.api import actions, forking, proposals, views
from agentledger.api.deps import Ctx, Who, clearance_of, is_staff, scope_of, visible_run
from agentledger.api.problems import PROBLEM_RESPONSES, ApiProblem
from agentledger.domain.approval_edits import MAX_EDITS
from agentledger.domain.operators import MAX_INSTRUCTION_CHARS
from agentledger.domain.request_limit import MAX_REQUEST_CHARS

router = APIRouter(prefix="/api", tags=["runs"], responses=PROBLEM_RESPONSES)
Id = Annotated[str, Field(min_length=1, max_length=200)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StartRun(_Body):
    pack: str = Field("support", min_length=1, max_length=100)
    request: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS)


class ReplyBody(_Body):
    text: str = Field(min_length=1, max_length=20_000)


class CancelBody(_Body):
    reason: str = Field(min_length=1, max_length=500)


class SteerBody(_Body):
    text: str = Field(min_length=1, max_length=MAX_INSTRUCTION_CHARS)


class ForkBody(_Body):
    at: int = Field(ge=1)
    dry: StrictBool = False
    model: str | None = Field(None, min_length=1, max_length=100)
    profile: str | None = Field(None, min_length=1, max_length=100)


class BatchDecision(_Body):
    run_id: Id
    approval_id: Id
    approve: StrictBool
    reason: str = Field("", max_length=2_000)


class BatchBody(_Body):
    decisions: list[BatchDecision] = Field(min_length=1, max_length=actions.MAX_BATCH)


class DecisionBody(_Body):
    approve: StrictBool  # "yes", 1 or "false" is not a decision
    reason: str = Field("", max_length=2_000)
    content: dict[str, JsonValue] | None = None
    edits: dict[str, JsonValue] | None = Field(None, min_length=1, max_length=MAX_EDITS)
    """Approve the call with these arguments changed; the run judges the edited call."""


def page_cursor(at: datetime, run_id: str) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{run_id}".encode()).decode()


def after_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    if not cursor:
        return None
    try:
        at, _, run_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        return datetime.fromisoformat(at), run_id
    except (ValueError, UnicodeDecodeError):
        raise ApiProblem(400, "invalid-cursor", "the cursor is not one this API returned") from None


@router.get("/runs", summary="List runs (newest first), filtered and paginated")
def list_runs(
    ctx: Ctx,
    caller: Who,
    status: Literal["running", "completed", "failed", "cancelled", "awaiting_approval"]
    | None = None,
    pack: Annotated[str | None, Query(max_length=100)] = None,
    principal: Annotated[str | None, Query(max_length=200)] = None,
    updated_from: datetime | None = None,
    updated_to: datetime | None = None,
    waiting_on_approval: bool | None = None,
    q: Annotated[
        str | None, Query(max_length=200, description="words the request contains")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=500)] = None,
) -> dict[str, Any]:
    scope = scope_of(caller)
    where = RunFilter(
        tenant_id=scope.tenant_id,
        principal_id=scope.principal_id or principal,
        status=status,
        pack=pack,
        updated_from=updated_from,
        updated_to=updated_to,
        waiting_on_approval=waiting_on_approval,
        after=after_cursor(cursor),
        text=q,
    )
    rows = ctx.ledger.search_runs(where, limit=limit + 1)
    page = rows[:limit]
    more = len(rows) > limit
    return {
        "runs": [views.run_summary(r) for r in page],
        "next_cursor": page_cursor(page[-1].updated_at, page[-1].run_id) if more else None,
    }


@router.post("/runs", status_code=201, summary="Start a run as the caller")
async def start_run(ctx: Ctx, caller: Who, body: StartRun) -> dict[str, Any]:
    run_id = await actions.start_run(ctx, caller, body.pack, body.request)
    return {"run_id": run_id}


@router.get("/runs/{run_id}", summary="A run: its read-model row and folded state")
def get_run(ctx: Ctx, caller: Who, run_id: Id) -> dict[str, Any]:
    row = visible_run(ctx, caller, run_id)
    return {"run": views.run_summary(row), "state": views.state_view(ctx.ledger.read(run_id))}


@router.get("/runs/{run_id}/timeline", summary="A run's events, one line each")
def get_timeline(ctx: Ctx, caller: Who, run_id: Id) -> dict[str, Any]:
    visible_run(ctx, caller, run_id)
    return {"events": views.timeline(ctx.ledger.read(run_id))}


@router.get("/runs/{run_id}/packets", summary="The context packets a run's steps were given")
def list_packets(ctx: Ctx, caller: Who, run_id: Id) -> dict[str, Any]:
    visible_run(ctx, caller, run_id)
    return {"packets": views.packet_index(ctx.ledger.read(run_id))}


@router.get("/runs/{run_id}/packets/{packet_hash}", summary="One packet, exactly as sent")
def get_packet(ctx: Ctx, caller: Who, run_id: Id, packet_hash: Id) -> dict[str, Any]:
    visible_run(ctx, caller, run_id)
    return views.packet_view(ctx.ledger, ctx.ledger.read(run_id), packet_hash, clearance_of(caller))


@router.get("/runs/{run_id}/packets/{a}/diff/{b}", summary="What changed between two packets")
def diff_packets(ctx: Ctx, caller: Who, run_id: Id, a: Id, b: Id) -> dict[str, Any]:
    visible_run(ctx, caller, run_id)
    events = ctx.ledger.read(run_id)
    packets = [views.packet_view(ctx.ledger, events, h, clearance_of(caller)) for h in (a, b)]
    return views.packet_diff(*packets)


@router.get("/runs/{run_id}/receipts", summary="Tool receipts: model view and user view")
def get_receipts(ctx: Ctx, caller: Who, run_id: Id) -> dict[str, Any]:
    visible_run(ctx, caller, run_id)
    return {"receipts": views.receipts(ctx.ledger.read(run_id))}


@router.get("/runs/{run_id}/manifest", summary="The frozen execution manifest of the run")
def get_manifest(ctx: Ctx, caller: Who, run_id: Id) -> dict[str, Any]:
    row = visible_run(ctx, caller, run_id)
    body = ctx.ledger.get_manifest_body(row.manifest_hash)
    return {"manifest_hash": row.manifest_hash, "manifest": body}


@router.get("/runs/{run_id}/approvals", summary="A run's approvals and refused attempts")
def run_approvals(ctx: Ctx, caller: Who, run_id: Id) -> dict[str, Any]:
    visible_run(ctx, caller, run_id)
    rows = ctx.ledger.approvals(status=None, run_id=run_id)
    events = ctx.ledger.read(run_id)
    return {
        "approvals": proposals.approvals_in_context(ctx.ledger, rows),
        "decisions": views.decisions(events),
        "refused_attempts": views.refusals(events),
    }


@router.post("/runs/{run_id}/replies", summary="The requester's reply to a run waiting on them")
async def post_reply(ctx: Ctx, caller: Who, run_id: Id, body: ReplyBody) -> dict[str, Any]:
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "reply")
    return await actions.reply(ctx, caller, run_id, body.text)


@router.post(
    "/runs/{run_id}/cancel",
    summary="Cancel a live run as the verified caller (the run checks the canceller role); "
    "answers once the run has ended",
)
async def post_cancel(ctx: Ctx, caller: Who, run_id: Id, body: CancelBody) -> dict[str, Any]:
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "cancel")
    return await actions.operate(ctx, caller, run_id, "cancel", body.reason)


@router.post(
    "/runs/{run_id}/steer",
    summary="Tell a live run something, as the verified caller (the run checks the steerer "
    "role); its later packets carry the instruction",
)
async def post_steer(ctx: Ctx, caller: Who, run_id: Id, body: SteerBody) -> dict[str, Any]:
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "steer")
    return await actions.operate(ctx, caller, run_id, "steer", body.text)


@router.post(
    "/runs/{run_id}/fork",
    summary="Start a new run from this run's state at one of its events, as the verified "
    "caller (the fork checks the forker role); dry, or against the pack's sandbox",
)
async def post_fork(ctx: Ctx, caller: Who, run_id: Id, body: ForkBody) -> dict[str, Any]:
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "fork")
    return await forking.fork(
        ctx, caller, run_id, body.at, dry=body.dry, model=body.model, profile=body.profile
    )


@router.post(
    "/runs/{run_id}/approvals/{approval_id}/decision",
    summary="Approve or reject, as the verified caller (the run checks who may)",
)
async def post_decision(
    ctx: Ctx, caller: Who, run_id: Id, approval_id: Id, body: DecisionBody
) -> dict[str, Any]:
    return await actions.decide(
        ctx,
        caller,
        run_id,
        approval_id,
        approve=body.approve,
        reason=body.reason,
        content=body.content,
        edits=body.edits,
    )


@router.post(
    "/approvals/decisions",
    summary="Decide several approvals at once: each signed and recorded on its own; the "
    "answer says how each went",
)
async def post_decisions(ctx: Ctx, caller: Who, body: BatchBody) -> dict[str, Any]:
    return {"results": await actions.decide_many(ctx, caller, body.decisions)}


@router.get("/approvals", summary="The approvals inbox of the caller's tenant")
def inbox(
    ctx: Ctx,
    caller: Who,
    status: Literal["pending", "granted", "rejected", "expired"] = "pending",
) -> dict[str, Any]:
    rows = ctx.ledger.approvals(status=status, tenant_id=caller.principal.tenant_id)
    if not is_staff(caller):
        rows = [r for r in rows if r.requested_by == caller.principal.user_id]
    return {"approvals": proposals.approvals_in_context(ctx.ledger, rows)}


@router.get("/me", summary="Who the token says the caller is", tags=["identity"])
def me(caller: Who) -> dict[str, Any]:
    p = caller.principal
    return {
        "subject": caller.subject,
        "issuer": caller.issuer,
        "user_id": p.user_id,
        "tenant_id": p.tenant_id,
        "roles": sorted(p.roles),
    }
