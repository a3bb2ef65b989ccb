"""The console's runs: search them (request words, requester, status, pack, time range) a page
at a time, start one, and act on one (cancel with a confirmation, steer), each through the same
actions as the JSON API. Refusals render as problem pages (``api.main``)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agentledger.activities.ledger import RunRow
from agentledger.api import actions, forking, views
from agentledger.api.deps import Ctx, scope_of, visible_run
from agentledger.api.problems import ApiProblem
from agentledger.api.routes.runs import after_cursor, page_cursor
from agentledger.api.routes.ui import UiWho, check_csrf, page
from agentledger.app.registry import pack_names
from agentledger.domain.operators import MAX_INSTRUCTION_CHARS, MAX_REASON_CHARS
from agentledger.domain.request_limit import MAX_REQUEST_CHARS

router = APIRouter(include_in_schema=False)
PAGE = 50
RunStatusChoice = Literal["", "running", "awaiting_approval", "completed", "failed", "cancelled"]
Text = Annotated[str, Query(max_length=200)]


@router.get("/ui/runs")
def runs(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    status: RunStatusChoice = "",
    q: Text = "",
    pack: Text = "",
    requester: Text = "",
    updated_from: Text = "",
    updated_to: Text = "",
    cursor: Annotated[str, Query(max_length=500)] = "",
) -> HTMLResponse:
    """Newest first, ``PAGE`` at a time; the next page's link keeps the filters. Times without
    a zone (a ``datetime-local`` field's) are UTC; an empty field leaves its bound open."""
    dates = {"updated_from": _moment(updated_from), "updated_to": _moment(updated_to)}
    scope = scope_of(caller)
    where = replace(
        scope,
        status=status or None,
        pack=pack or None,
        principal_id=scope.principal_id or requester or None,
        updated_from=dates["updated_from"],
        updated_to=dates["updated_to"],
        text=q or None,
        after=after_cursor(cursor),
    )
    rows = ctx.ledger.search_runs(where, limit=PAGE + 1)
    shown = rows[:PAGE]
    filters = {"status": status, "q": q, "pack": pack, "requester": requester}
    following = _next_page(filters, dates, shown[-1]) if len(rows) > PAGE else None
    return page(
        request,
        "runs.html",
        runs=[views.run_summary(r) for r in shown],
        filters=filters,
        dates=dates,
        next_href=following,
        packs=pack_names(),
    )


def _next_page(filters: dict[str, str], dates: dict[str, datetime | None], last: RunRow) -> str:
    """The next page's link: the same filters, after the last row shown."""
    kept = {k: v for k, v in filters.items() if v}
    kept |= {k: v.isoformat() for k, v in dates.items() if v is not None}
    kept["cursor"] = page_cursor(last.updated_at, last.run_id)
    return f"/ui/runs?{urlencode(kept)}"


def _moment(text: str) -> datetime | None:
    if not text:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise ApiProblem(400, "invalid-time", f"{text!r} is not a date and time") from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at


@router.post("/ui/runs")
async def start(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    pack: Annotated[str, Form(min_length=1, max_length=100)],
    text: Annotated[str, Form(min_length=1, max_length=MAX_REQUEST_CHARS)],
    csrf_token: Annotated[str, Form(max_length=200)],
) -> Response:
    """A run with the signed-in caller as its requester, as ``POST /api/runs`` starts one."""
    check_csrf(request, csrf_token)
    run_id = await actions.start_run(ctx, caller, pack, text)
    return RedirectResponse(f"/ui/runs/{run_id}?notice=started", status_code=303)


@router.post("/ui/runs/{run_id}/cancel")
async def cancel(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    run_id: str,
    reason: Annotated[str, Form(min_length=1, max_length=MAX_REASON_CHARS)],
    csrf_token: Annotated[str, Form(max_length=200)],
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Cancel once the operator has ticked the confirmation: nothing consequential starts
    after it, and the run's pending approvals expire."""
    check_csrf(request, csrf_token)
    if confirm != "yes":
        raise ApiProblem(400, "not-confirmed", "tick the confirmation to cancel this run")
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "cancel")
    ended = await actions.operate(ctx, caller, run_id, "cancel", reason)
    return RedirectResponse(f"/ui/runs/{run_id}?notice={ended['status']}", status_code=303)


@router.post("/ui/runs/{run_id}/steer")
async def steer(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    run_id: str,
    text: Annotated[str, Form(min_length=1, max_length=MAX_INSTRUCTION_CHARS)],
    csrf_token: Annotated[str, Form(max_length=200)],
) -> Response:
    check_csrf(request, csrf_token)
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "steer")
    taken = await actions.operate(ctx, caller, run_id, "steer", text)
    return RedirectResponse(f"/ui/runs/{run_id}?notice=instructed+%23{taken['seq']}", 303)


@router.post("/ui/runs/{run_id}/fork")
async def fork(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    run_id: str,
    at: Annotated[int, Form(ge=1)],
    csrf_token: Annotated[str, Form(max_length=200)],
    dry: Annotated[str, Form(max_length=10)] = "",
    model: Annotated[str, Form(max_length=100)] = "",
    confirm: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Fork once the operator has ticked the confirmation; the fork's page follows."""
    check_csrf(request, csrf_token)
    if confirm != "yes":
        raise ApiProblem(400, "not-confirmed", "tick the confirmation to fork this run")
    await asyncio.to_thread(visible_run, ctx, caller, run_id, "fork")
    started = await forking.fork(
        ctx, caller, run_id, at, dry=dry == "yes", model=model.strip() or None, profile=None
    )
    return RedirectResponse(f"/ui/runs/{started['run_id']}?notice=forked", status_code=303)
