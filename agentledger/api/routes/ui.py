"""The web UI: server-rendered pages over the same views and actions as the JSON API.

Signing in stores the bearer token in an HttpOnly cookie (scripts never see it) with a
separate CSRF cookie; every form carries the CSRF value and a POST whose field does not match
its cookie is refused (double submit). Pages work without script; ``static/app.js`` only adds
expiry countdowns and live reloads from the run's event stream.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import JsonValue

from agentledger.api import actions, views
from agentledger.api.auth import Caller
from agentledger.api.deps import (
    TOKEN_COOKIE,
    Ctx,
    clearance_of,
    current_caller,
    visible_run,
)
from agentledger.api.problems import ApiProblem
from agentledger.api.ui_pages import inbox_items, run_page
from agentledger.app.edits import changed_fields, typed_edits
from agentledger.app.erasure import erased_run, erased_timeline
from agentledger.app.errors import ConfigError

templates = Jinja2Templates(directory=Path(__file__).parents[1] / "templates")
router = APIRouter(include_in_schema=False)
CSRF_COOKIE = "agentledger_csrf"
SESSION_SECONDS = 8 * 3600


class LoginRequired(Exception):
    """A page needs a signed-in caller; the answer is the login form, not a JSON 401."""


def ui_caller(request: Request) -> Caller:
    try:
        return current_caller(request, request.headers.get("authorization"))
    except ApiProblem as exc:
        if exc.status == 401:
            raise LoginRequired from None
        raise


UiWho = Annotated[Caller, Depends(ui_caller)]


def check_csrf(request: Request, csrf_token: str) -> None:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not secrets.compare_digest(cookie.encode(), csrf_token.encode()):
        raise ApiProblem(403, "csrf-failed", "the form's CSRF token does not match this session")


def problem_page(request: Request, problem: ApiProblem) -> HTMLResponse:
    """A refusal or an unknown id on a page: the same typed problem, in HTML."""
    return page(request, "problem.html", status=problem.status, problem=problem.body())


def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
    caller = getattr(request.state, "caller", None)
    context = {"caller": caller, "csrf": request.cookies.get(CSRF_COOKIE, ""), **values}
    return templates.TemplateResponse(request, name, context, status_code=status)


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/ui/approvals", status_code=303)


@router.get("/login")
def login_form(request: Request, error: str = "") -> HTMLResponse:
    return page(request, "login.html", error=error)


@router.post("/login")
def login(ctx: Ctx, request: Request, token: Annotated[str, Form(max_length=8192)]) -> Response:
    try:
        ctx.authenticator.verify(token.strip())
    except ApiProblem as exc:
        return page(request, "login.html", status=401, error=exc.detail)
    response = RedirectResponse("/ui/approvals", status_code=303)
    secure = bool(request.app.state.secure_cookies)
    cookie = {"max_age": SESSION_SECONDS, "samesite": "strict", "secure": secure}
    response.set_cookie(TOKEN_COOKIE, token.strip(), httponly=True, **cookie)  # type: ignore[arg-type]
    response.set_cookie(CSRF_COOKIE, secrets.token_urlsafe(32), httponly=True, **cookie)  # type: ignore[arg-type]
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(TOKEN_COOKIE)
    response.delete_cookie(CSRF_COOKIE)
    return response


@router.get("/ui/approvals")
def inbox(ctx: Ctx, caller: UiWho, request: Request, notice: str = "") -> HTMLResponse:
    return page(request, "inbox.html", items=inbox_items(ctx, caller), notice=notice)


@router.post("/ui/runs/{run_id}/approvals/{approval_id}")
async def decide(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    run_id: str,
    approval_id: str,
    decision: Annotated[str, Form(pattern="^(approve|approve_edited|reject)$")],
    csrf_token: Annotated[str, Form(max_length=200)],
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """Approve, reject, or approve with the arguments as edited in the card's form (fields
    ``arg.NAME``; those left as shown are no edit)."""
    check_csrf(request, csrf_token)
    approve = decision != "reject"
    try:
        edits = await _form_edits(ctx, caller, request, run_id, approval_id, decision)
        await actions.decide(
            ctx, caller, run_id, approval_id, approve=approve, reason=reason, edits=edits
        )
    except ApiProblem as exc:
        refusal = {"run_id": run_id, "approval_id": approval_id, **exc.body()}
        items = await asyncio.to_thread(inbox_items, ctx, caller)
        return page(request, "inbox.html", status=exc.status, items=items, refusal=refusal)
    verb = "approved" if approve else "rejected"
    return RedirectResponse(f"/ui/runs/{run_id}?notice={approval_id}+{verb}", status_code=303)


@dataclass(frozen=True)
class _Picked:
    run_id: str
    approval_id: str
    approve: bool
    reason: str


@router.post("/ui/approvals/decisions")
async def decide_selected(
    ctx: Ctx,
    caller: UiWho,
    request: Request,
    decision: Annotated[str, Form(pattern="^(approve|reject)$")],
    csrf_token: Annotated[str, Form(max_length=200)],
    pick: Annotated[list[str], Form(max_length=actions.MAX_BATCH)] = [],  # noqa: B006
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """The inbox's checked cards, decided the same way: each on its own, each reported."""
    check_csrf(request, csrf_token)
    approve = decision == "approve"
    chosen = [p.split(" ", 1) for p in pick if " " in p]
    picked = [_Picked(run, apr, approve, reason) for run, apr in chosen]
    results = await actions.decide_many(ctx, caller, picked) if picked else []
    items = await asyncio.to_thread(inbox_items, ctx, caller)
    return page(request, "inbox.html", items=items, batch=results)


async def _form_edits(
    ctx: Ctx, caller: Caller, request: Request, run_id: str, approval_id: str, decision: str
) -> dict[str, JsonValue] | None:
    if decision != "approve_edited":
        return None
    form = await request.form()
    fields = {
        str(k).removeprefix("arg."): str(v) for k, v in form.items() if str(k).startswith("arg.")
    }
    proposed = await asyncio.to_thread(actions.shown_arguments, ctx, caller, run_id, approval_id)
    try:
        return typed_edits(changed_fields(fields, proposed), proposed)
    except ConfigError as exc:
        raise ApiProblem(422, "invalid-edit", str(exc), reason_code="invalid_edit") from None


@router.get("/ui/runs/{run_id}")
def run(ctx: Ctx, caller: UiWho, request: Request, run_id: str, notice: str = "") -> HTMLResponse:
    row = visible_run(ctx, caller, run_id)
    if (erased := erased_run(ctx.ledger, run_id)) is not None:
        timeline = erased_timeline(ctx.ledger, run_id)
        return page(request, "erased.html", run=row, erased=erased, timeline=timeline)
    return page(request, "run.html", notice=notice, **run_page(ctx, row))


@router.get("/ui/runs/{run_id}/packets/{packet_hash}")
def packet(
    ctx: Ctx, caller: UiWho, request: Request, run_id: str, packet_hash: str
) -> HTMLResponse:
    visible_run(ctx, caller, run_id)
    shown = views.packet_view(
        ctx.ledger, ctx.ledger.read(run_id), packet_hash, clearance_of(caller)
    )
    return page(request, "packet.html", run_id=run_id, packet=shown)


@router.get("/ui/runs/{run_id}/diff")
def diff(ctx: Ctx, caller: UiWho, request: Request, run_id: str, a: str, b: str) -> HTMLResponse:
    visible_run(ctx, caller, run_id)
    events = ctx.ledger.read(run_id)
    shown = views.packet_diff(
        *(views.packet_view(ctx.ledger, events, h, clearance_of(caller)) for h in (a, b))
    )
    return page(request, "diff.html", run_id=run_id, diff=shown)
