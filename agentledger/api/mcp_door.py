"""The MCP door: ``agentledger serve`` answers MCP over streamable HTTP at ``/mcp/``.

Tools: per installed pack, ``<pack>_start_run`` (its input schema is the pack's request, bounded
as the API bounds it); for every caller ``reply_to_run``, ``run_status``; for approvers
``pending_approvals``. Every call is the verified caller's, exactly as on the JSON API: the
same bearer tokens (``Authenticator``), the same tenant and role rules (``visible_run``,
``is_staff``), the same operations (``api.actions``). There is no tool to approve: a decision
is a signed assertion made through the API or the UI by an approver, never by an MCP client.

Authorisation follows the MCP authorization specification as a resource server: a call without
a valid token is answered ``401`` with ``WWW-Authenticate`` naming the protected-resource
metadata (RFC 9728, ``/.well-known/oauth-protected-resource/mcp``), which names the configured
issuers as authorization servers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl, Field
from starlette.routing import Route

from agentledger.activities.ports import Pack
from agentledger.api import actions, proposals, views
from agentledger.api.auth import Caller
from agentledger.api.deps import ApiContext, is_staff, visible_run
from agentledger.api.problems import ApiProblem
from agentledger.domain.request_limit import MAX_REQUEST_CHARS

MCP_PATH = "/mcp"


class CallerTokens:
    """The API's bearer tokens, verified as the API verifies them (``TokenVerifier``)."""

    def __init__(self, ctx: ApiContext) -> None:
        self._ctx = ctx

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            caller = await asyncio.to_thread(self._ctx.authenticator.verify, token)
        except ApiProblem:
            return None
        return AccessToken(
            token=token, client_id=caller.subject, scopes=[], subject=caller.subject,
            claims={"iss": caller.issuer},
        )  # fmt: skip


def _caller(ctx: ApiContext) -> Caller:
    found = get_access_token()
    if found is None:  # the transport refuses such a call first; never trust a missing token
        raise ToolError("unauthenticated: no bearer token")
    try:
        return ctx.authenticator.verify(found.token)
    except ApiProblem as exc:
        raise ToolError(f"{exc.slug}: {exc.detail}") from None


def _problem(exc: ApiProblem) -> ToolError:
    return ToolError(f"{exc.slug}: {exc.detail}")


def mcp_server(
    ctx: ApiContext, packs: Iterable[Pack], *, resource_url: str, issuer_url: str
) -> MCPServer[Any]:
    with _root_logging_kept():
        server = _server(ctx, resource_url=resource_url, issuer_url=issuer_url)
    for pack in packs:
        server.add_tool(
            _starter(ctx, pack.name),
            name=f"{pack.name}_start_run",
            description=f"Start a {pack.name} run ({pack.profile.profile_id}) as yourself; "
            "returns its run id. Read its progress with run_status.",
        )
    _shared_tools(server, ctx)
    return server


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """``MCPServer()`` calls ``logging.basicConfig`` with a rich handler, which would take over
    the process's root logger; in a process that also runs a worker, a workflow's log record
    then makes the handler import ``rich`` inside the workflow sandbox, which fails the
    workflow task. ``basicConfig`` does nothing while the root logger has a handler."""
    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        yield
    finally:
        root.removeHandler(guard)


def _server(ctx: ApiContext, *, resource_url: str, issuer_url: str) -> MCPServer[Any]:
    return MCPServer(
        name="agentledger",
        instructions="Start governed agent runs, reply to them and read their answers. "
        "Consequential actions wait for a human approver; no tool here can approve.",
        token_verifier=CallerTokens(ctx),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer_url),
            resource_server_url=AnyHttpUrl(resource_url),
            validate_token_resource=False,  # the Authenticator checks the audience itself
        ),
    )


def _starter(ctx: ApiContext, pack: str) -> Any:
    async def start_run(
        request: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="the request"),
    ) -> dict[str, Any]:
        caller = _caller(ctx)
        try:
            return {"run_id": await actions.start_run(ctx, caller, pack, request)}
        except ApiProblem as exc:
            raise _problem(exc) from None

    return start_run


def _shared_tools(server: MCPServer[Any], ctx: ApiContext) -> None:
    @server.tool(description="A run's status and answer (your own runs; staff: your tenant's).")
    async def run_status(run_id: str = Field(min_length=1, max_length=200)) -> dict[str, Any]:
        caller = _caller(ctx)
        try:
            row = await asyncio.to_thread(visible_run, ctx, caller, run_id)
        except ApiProblem as exc:
            raise _problem(exc) from None
        state = await asyncio.to_thread(ctx.ledger.read, run_id)
        return {**views.run_summary(row), "state": views.state_view(state)}

    @server.tool(description="Reply to a run of yours that waits on your answer.")
    async def reply_to_run(
        run_id: str = Field(min_length=1, max_length=200),
        text: str = Field(min_length=1, max_length=20_000),
    ) -> dict[str, Any]:
        caller = _caller(ctx)
        try:
            await asyncio.to_thread(visible_run, ctx, caller, run_id, "reply")
            return await actions.reply(ctx, caller, run_id, text)
        except ApiProblem as exc:
            raise _problem(exc) from None

    @server.tool(description="Approvals pending in your tenant (approvers and staff only).")
    async def pending_approvals() -> list[dict[str, Any]]:
        caller = _caller(ctx)
        if not is_staff(caller):
            raise ToolError("forbidden: only approvers and staff see the approvals inbox")
        rows = await asyncio.to_thread(
            ctx.ledger.approvals, status="pending", tenant_id=caller.principal.tenant_id
        )
        return list(proposals.approvals_in_context(ctx.ledger, rows))


def transport_security(base_url: str) -> TransportSecuritySettings:
    """DNS-rebinding protection that admits this service's public name as well as loopback
    (the SDK's default admits loopback only, which a service behind a proxy is not)."""
    origin = urlsplit(base_url)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[origin.netloc, "127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=[f"{origin.scheme}://{origin.netloc}", "http://127.0.0.1:*",
                         "http://localhost:*", "http://[::1]:*"],
    )  # fmt: skip


def metadata_routes(resource_url: str, issuers: Iterable[str]) -> list[Route]:
    """The protected-resource metadata at the root, where a client looks for it."""
    servers = [AnyHttpUrl(i) for i in issuers if i.startswith(("http://", "https://"))]
    return create_protected_resource_routes(
        resource_url=AnyHttpUrl(resource_url),
        authorization_servers=servers or [AnyHttpUrl(resource_url)],
        resource_name="agentledger",
    )
