"""The ASGI application: the JSON API, the UI and their shared context, built in one place."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import make_asgi_app
from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.api.audit import DenialLog
from agentledger.api.auth import Authenticator, TrustedIssuer
from agentledger.api.deps import ApiContext
from agentledger.api.docs import install_docs
from agentledger.api.hooks import WebhookDoor
from agentledger.api.limits import DEFAULT_MAX_BODY_BYTES, BodyLimit, PageHeaders
from agentledger.api.mcp_door import MCP_PATH, mcp_server, metadata_routes, transport_security
from agentledger.api.problems import ApiProblem, install_handlers, problem_response
from agentledger.api.routes import admin as routes_admin
from agentledger.api.routes import codec as routes_codec
from agentledger.api.routes import hooks as routes_hooks
from agentledger.api.routes import live, ui, ui_runs
from agentledger.api.routes import memory as routes_memory
from agentledger.api.routes import runs as routes_runs
from agentledger.app.identity import Issuer
from agentledger.app.registry import loaded_packs

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
    webhooks: WebhookDoor | None = None,
    public_url: str | None = None,
    erasure_register: Path | None = None,
) -> FastAPI:
    """``signer``: the issuer that signs decisions and replies for verified callers (its key
    must be one the workers' runs trust); ``secure_cookies``: mark the session cookies
    ``Secure`` (behind TLS); ``webhooks``: the signed webhook sources ``/hooks`` accepts
    (their counters served at ``/metrics``); ``public_url``: this service's public base URL,
    to serve MCP at ``<public_url>/mcp/`` (``api.mcp_door``) and every loaded pack over A2A at
    ``<public_url>/a2a/<pack>`` (``api.a2a``); ``erasure_register``: where erasures are
    registered, so a restored backup is erased again (``app.erasure_register``)."""
    app = FastAPI(
        title="agentledger", version="1", description=DESCRIPTION, docs_url=None, redoc_url=None,
        lifespan=_lifespan,
    )  # fmt: skip
    app.state.context = ApiContext(
        ledger=ledger, client=client, task_queue=task_queue, signer=signer,
        authenticator=Authenticator(issuers, ledger.get_principal),
        denials=DenialLog(ledger.engine), erasure_register=erasure_register,
    )  # fmt: skip
    app.state.secure_cookies = secure_cookies
    app.state.webhooks = webhooks
    _install_routes(app)
    if webhooks is not None:
        app.mount("/metrics", make_asgi_app(webhooks.metrics.registry), name="metrics")
    if public_url is not None:
        _mount_doors(app, public_url.rstrip("/"), [i.issuer for i in issuers])
    install_docs(app)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(PageHeaders)
    return app


def _install_routes(app: FastAPI) -> None:
    """Problem handlers, the JSON API's routers, the UI and its static files."""
    install_handlers(app)
    app.add_exception_handler(ui.LoginRequired, _to_login)
    app.add_exception_handler(ApiProblem, _problem)
    routers = (
        routes_runs.router, live.router, routes_admin.router, routes_memory.router,
        routes_hooks.router, routes_codec.router,
    )  # fmt: skip
    for router in (*routers, ui.router, ui_runs.router):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")


def _mount_doors(app: FastAPI, base_url: str, issuers: list[str]) -> None:
    """The doors that hand out this service's own URLs: MCP, and each pack over A2A."""
    from agentledger.api import a2a  # a2a-sdk and protobuf, only where A2A is served

    _mount_mcp(app, base_url, issuers)
    app.router.routes.extend(a2a.routes(app.state.context, loaded_packs()[0], base_url))


def _mount_mcp(app: FastAPI, base_url: str, issuers: list[str]) -> None:
    resource = base_url + MCP_PATH
    web_issuers = [i for i in issuers if i.startswith(("http://", "https://"))]
    server = mcp_server(
        app.state.context, loaded_packs()[0].values(), resource_url=resource,
        issuer_url=(web_issuers or [base_url])[0],
    )  # fmt: skip
    transport = server.streamable_http_app(
        streamable_http_path="/", stateless_http=True,
        transport_security=transport_security(base_url),
    )  # fmt: skip
    app.mount(MCP_PATH, transport)
    app.router.routes.extend(metadata_routes(resource, issuers))
    app.state.mcp_server = server


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The MCP transport's session manager runs while the app does."""
    server = getattr(app.state, "mcp_server", None)
    if server is None:
        yield
        return
    async with server.session_manager.run():
        yield


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
