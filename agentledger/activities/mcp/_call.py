"""Calling an MCP tool from a tool activity, as a sync ``ToolImplementation``.

Each call opens a fresh session (no tool list cached in the worker: cached lists caused
non-determinism in other integrations), re-checks the server's identity, protocol and tool-list
digest against what the manifest pinned, then calls. Outcomes:

- the call was never sent (server down for a write, a different server, a changed tool list):
  a failed ``ToolOutput`` whose ``error_code`` names the cause (``mcp_server_unavailable``,
  ``mcp_protocol_mismatch``, ``mcp_server_identity_mismatch``, ``mcp_tool_list_changed``,
  ``mcp_auth_rejected``),
  recorded as an event; a read whose server is down raises ``McpServerUnavailable`` instead,
  so Temporal retries it;
- a JSON-RPC error (``mcp_protocol_error``: the request was refused) and a result with
  ``isError: true`` (``mcp_tool_error``: the tool ran and its operation failed) stay distinct;
- anything after the request left (timeout, broken transport) raises: a read is retried, a
  write (attempted once) is recorded in doubt by the workflow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import JsonValue
from sqlalchemy.engine import Engine
from temporalio import activity

from agentledger.activities.mcp._discover import list_all_tools, tools_digest
from agentledger.activities.mcp._elicitation import ElicitationHandler, decline_all
from agentledger.activities.mcp._errors import (
    McpAuthRejected,
    McpClientError,
    McpProtocolMismatch,
    McpServerIdentityMismatch,
    McpServerUnavailable,
    McpToolListChanged,
)
from agentledger.activities.mcp._session import ElicitationLog, open_session, run_sync
from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.activities.redaction import redact
from agentledger.domain.canonical import canonical_json
from agentledger.domain.mcp import McpServerPin, McpToolResult
from agentledger.domain.tools import ToolContract

ProgressListener = Callable[[float, float | None], None]
IDEMPOTENCY_META_KEY = "io.agentledger/idempotency-key"
_NOT_SENT_CODES: dict[type[McpClientError], str] = {
    McpAuthRejected: "mcp_auth_rejected",
    McpProtocolMismatch: "mcp_protocol_mismatch",
    McpServerIdentityMismatch: "mcp_server_identity_mismatch",
    McpToolListChanged: "mcp_tool_list_changed",
}


class McpToolImplementation:
    def __init__(
        self,
        contract: ToolContract,
        pin: McpServerPin,
        tool: str,
        *,
        elicitation_handler: ElicitationHandler = decline_all,
        progress_listener: ProgressListener | None = None,
    ) -> None:
        if tool not in pin.connection.allowed_tools:
            raise ValueError(
                f"tool {tool!r} is not allowed by MCP contract {pin.connection.name!r}"
            )
        self.contract = contract
        self._pin = pin
        self._connection = pin.connection
        self._tool = tool
        self._elicitation = elicitation_handler
        self._listener = progress_listener

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        try:
            return run_sync(lambda: self._execute(call))
        except McpServerUnavailable as exc:
            if self.contract.scope == "read" or not exc.before_request:
                raise
            return _failed("mcp_server_unavailable", str(exc))
        except tuple(_NOT_SENT_CODES) as exc:
            # The request was never sent: a recorded failure the run's policy handles.
            return _failed(_NOT_SENT_CODES[type(exc)], str(exc))

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        # MCP cannot say whether a request ran: writes are attempted once (the contract is not
        # reconcilable) and carry the idempotency key in _meta for servers that honour it.
        return None

    async def _execute(self, call: ToolCall) -> ToolOutput:
        log: ElicitationLog = []
        async with open_session(self._connection, self._elicitation, log) as (session, _):
            await self._check_tool_list(session)
            async with anyio.create_task_group() as beating:
                beating.start_soon(self._heartbeat)
                try:
                    with anyio.fail_after(self._connection.call_timeout_seconds):
                        result = await session.call_tool(
                            self._tool,
                            call.arguments.model_dump(mode="json"),
                            progress_callback=self._on_progress,
                            meta=_meta(call),
                        )
                except MCPError as exc:
                    return _failed(
                        "mcp_protocol_error", f"JSON-RPC error {exc.code}: {exc.message}"
                    )
                finally:
                    beating.cancel_scope.cancel()
        return self._output(result, log)

    async def _check_tool_list(self, session: Any) -> None:
        current = tools_digest(await list_all_tools(session))
        if current != self._pin.snapshot.tools_digest:
            raise McpToolListChanged(
                f"MCP server {self._connection.name!r} changed its tool list since the run's "
                f"manifest pinned it ({self._pin.snapshot.tools_digest} -> {current})"
            )

    async def _heartbeat(self) -> None:
        """While a call is in flight, tell Temporal this worker is alive (a dead one stops)."""
        while True:
            await anyio.sleep(self._connection.heartbeat_seconds / 3)
            if activity.in_activity():
                activity.heartbeat()

    async def _on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        if activity.in_activity():
            activity.heartbeat({"progress": progress, "total": total})
        if self._listener is not None:
            self._listener(progress, total)

    def _output(self, result: types.CallToolResult, log: ElicitationLog) -> ToolOutput:
        observation = McpToolResult(
            server=self._connection.name,
            tool=self._tool,
            # Scrubbed: an error (or a careless server) may quote a token this worker sent.
            text=redact(
                "\n".join(p.text for p in result.content if isinstance(p, types.TextContent))
            ),
            structured=result.structured_content,
            other_parts=[p.type for p in result.content if not isinstance(p, types.TextContent)],
            elicitations=[_elicitation_record(request, action) for request, action in log],
        )
        output: dict[str, JsonValue] = observation.model_dump(mode="json")
        size = len(canonical_json(output))
        if size > self._connection.max_result_bytes:
            return _failed(
                "result_too_large",
                f"MCP result is {size} bytes, over the limit of "
                f"{self._connection.max_result_bytes}",
            )
        if result.is_error:
            return ToolOutput(
                status="failed",
                output=output,
                error_code="mcp_tool_error",
                error_message=observation.text[:500],
            )
        return ToolOutput(status="succeeded", output=output)


def _meta(call: ToolCall) -> types.RequestParamsMeta | None:
    if call.idempotency_key is None:
        return None
    # RequestParamsMeta is an open TypedDict (extra_items) that mypy cannot express yet.
    return cast(types.RequestParamsMeta, {IDEMPOTENCY_META_KEY: call.idempotency_key})


def _elicitation_record(request: Any, action: str) -> dict[str, JsonValue]:
    record: dict[str, JsonValue] = request.model_dump(mode="json")
    return {**record, "digest": request.digest, "action": action}


def _failed(code: str, message: str) -> ToolOutput:
    message = redact(message)
    return ToolOutput(
        status="failed",
        output={"error": code, "message": message},
        error_code=code,
        error_message=message,
    )
