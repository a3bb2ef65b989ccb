"""The ASGI application: the JSON API, the UI and their shared context, built in one place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.api.audit import DenialLog
from agentledger.api.auth import Authenticator, TrustedIssuer
from agentledger.api.deps import ApiContext
from agentledger.api.docs import install_docs
from agentledger.api.limits import DEFAULT_MAX_BODY_BYTES, BodyLimit, PageHeaders
from agentledger.api.problems import ApiProblem, install_handlers, problem_response
from agentledger.api.routes import admin as routes_admin
from agentledger.api.routes import live, ui
from agentledger.api.routes import memory as routes_memory
from agentledger.api.routes import runs as routes_runs
from agentledger.app.identity import Issuer

STATIC = Path(__file__).parent / "static"

DESCRIPTION = """The governed runtime's HTTP API. Every request carries a bearer token from a
trusted issuer; every answer comes from the ledger (runs, events, packets, receipts, approvals)
or goes through Temporal (starting runs, replies, decisions). Errors are RFC 9457 problem
details with typed `type`s."""


def create_app(
    ledger: Ledger,
    client: Client,
    task_queue: str,
    issuers: Sequence[TrustedIssuer],
    *,
    signer: Issuer,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    secure_cookies: bool = False,
) -> FastAPI:
    """``signer``: the issuer that signs decisions and replies for verified callers (its key
    must be one the workers' runs trust); ``secure_cookies``: mark the session cookies
    ``Secure`` (behind TLS)."""
    app = FastAPI(
        title="agentledger", version="1", description=DESCRIPTION, docs_url=None, redoc_url=None
    )
    app.state.context = ApiContext(
        ledger=ledger,
        client=client,
        task_queue=task_queue,
        authenticator=Authenticator(issuers, ledger.get_principal),
        denials=DenialLog(ledger.engine),
        signer=signer,
    )
    app.state.secure_cookies = secure_cookies
    install_handlers(app)
    app.add_exception_handler(ui.LoginRequired, _to_login)
    app.add_exception_handler(ApiProblem, _problem)
    routers = (routes_runs.router, live.router, routes_admin.router, routes_memory.router)
    for router in (*routers, ui.router):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    install_docs(app)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(PageHeaders)
    return app


def _to_login(request: Request, exc: Exception) -> RedirectResponse:
    """A page asked for without a valid session: the login form, not a JSON 401."""
    return RedirectResponse("/login", status_code=303)


def _problem(request: Request, exc: Exception) -> Response:
    """Problems on pages render as pages; the API answers problem+json."""
    assert isinstance(exc, ApiProblem)
    if request.url.path.startswith("/ui/"):
        return ui.problem_page(request, exc)
    headers = {"WWW-Authenticate": 'Bearer realm="agentledger"'} if exc.status == 401 else None
    return problem_response(exc, headers)
