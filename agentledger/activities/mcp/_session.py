"""Open one checked MCP session: connect, initialize, and hold the server to its contract."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentledger.activities.mcp._auth import BoundBearer
from agentledger.activities.mcp._elicitation import ElicitationHandler, decline_all
from agentledger.activities.mcp._errors import (
    McpClientError,
    McpContractError,
    McpProtocolMismatch,
    McpServerIdentityMismatch,
    McpServerUnavailable,
)
from agentledger.activities.redaction import hold
from agentledger.domain.elicitation import ElicitationRequest
from agentledger.domain.mcp import McpConnectionContract, StdioTransport

T = TypeVar("T")
_TRANSPORT_ERRORS = (
    OSError,
    httpx2.TransportError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)
ElicitationLog = list[tuple[ElicitationRequest, str]]


def server_env(transport: StdioTransport, credential_env: tuple[str, ...]) -> dict[str, str]:
    """Only the allow-listed variables, read at spawn time; values never enter a contract."""
    missing = [name for name in credential_env if name not in os.environ]
    if missing:
        raise McpContractError(f"credential variables not set: {', '.join(missing)}")
    hold(*(os.environ[name] for name in credential_env))
    names = (*transport.env_allow, *credential_env)
    return {name: os.environ[name] for name in names if name in os.environ}


async def _connect(
    contract: McpConnectionContract, stack: AsyncExitStack
) -> tuple[Any, Any, BoundBearer | None]:
    """The transport's streams, and the token it sends (if any), closed with ``stack``."""
    spec = contract.transport
    if isinstance(spec, StdioTransport):
        env = server_env(spec, contract.credential_env)
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=env)
        read, write = await stack.enter_async_context(stdio_client(params))
        return read, write, None
    bearer = None if spec.auth is None else BoundBearer(contract.name, spec.auth, spec.audience)
    client = await stack.enter_async_context(create_mcp_http_client(auth=bearer))
    read, write = await stack.enter_async_context(
        streamable_http_client(spec.url, http_client=client)
    )
    return read, write, bearer


def _elicitation_callback(handler: ElicitationHandler, log: ElicitationLog) -> Any:
    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        request = ElicitationRequest(
            mode=params.mode,
            message=params.message,
            requested_schema=getattr(params, "requested_schema", None),
            url=getattr(params, "url", None),
        )
        answer = handler(request)
        log.append((request, answer.action))
        # Validated against the SDK's narrower content type, which JsonValue does not prove.
        return types.ElicitResult.model_validate(
            {"action": answer.action, "content": answer.content}
        )

    return callback


def check_handshake(contract: McpConnectionContract, init: types.InitializeResult) -> None:
    if init.protocol_version != contract.protocol_version:
        raise McpProtocolMismatch(
            f"MCP server {contract.name!r} negotiated protocol {init.protocol_version}, "
            f"the contract pins {contract.protocol_version}"
        )
    found = (init.server_info.name, init.server_info.version)
    if found != (contract.server_name, contract.server_version):
        raise McpServerIdentityMismatch(
            f"MCP server {contract.name!r} identifies as {found[0]} {found[1]}, the contract "
            f"expects {contract.server_name} {contract.server_version}"
        )


@asynccontextmanager
async def open_session(
    contract: McpConnectionContract,
    elicitation: ElicitationHandler = decline_all,
    log: ElicitationLog | None = None,
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    # Elicitation is always offered (declining by default) so the server lists the same tools
    # whatever handler a call uses: the tool-list digest must not depend on it.
    callback = _elicitation_callback(elicitation, log if log is not None else [])
    async with AsyncExitStack() as stack:
        bearer: BoundBearer | None = None
        try:
            read, write, bearer = await _connect(contract, stack)
            session = await stack.enter_async_context(
                ClientSession(read, write, elicitation_callback=callback)
            )
            with anyio.fail_after(contract.call_timeout_seconds):
                init = await session.initialize()
        except McpClientError:
            raise
        except Exception as exc:
            refusal = bearer.refusal() if bearer is not None else None
            if refusal is not None:
                raise refusal from exc
            raise McpServerUnavailable(
                f"MCP server {contract.name!r} did not start or initialize: "
                f"{type(exc).__name__}: {exc}",
                before_request=True,
            ) from exc
        check_handshake(contract, init)
        yield session, init


def run_sync(work: Callable[[], Awaitable[T]]) -> T:
    """Run on a private event loop: tool implementations are sync (run in activity threads).

    anyio task groups wrap errors in exception groups; the single typed error inside is what
    the caller and Temporal must see.
    """
    try:
        try:
            return anyio.run(work)
        except BaseExceptionGroup as group:
            raise _first_leaf(group) from group
    except _TRANSPORT_ERRORS as exc:
        # A transport task failing (refused connection, dead pipe) cancels the session from
        # the side, so it may surface here rather than where the request was made.
        raise McpServerUnavailable(f"MCP transport failed: {type(exc).__name__}: {exc}") from exc


def _first_leaf(group: BaseExceptionGroup[Any]) -> BaseException:
    leaves = _leaves(group)
    typed = [exc for exc in leaves if isinstance(exc, McpClientError)]
    real = [exc for exc in leaves if not isinstance(exc, asyncio.CancelledError)]
    return (typed or real or leaves)[0]


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found
