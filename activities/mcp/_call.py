"""Calling an MCP tool from a tool activity, as a sync ``ToolImplementation``.

Each call opens a fresh session (no tool list cached in the worker: issue 8 notes that cached
lists caused non-determinism elsewhere), re-checks the server's identity, protocol and tool-list
digest against what the manifest froze, then calls. Two failure families stay distinct:
a JSON-RPC error (``mcp_protocol_error``: the request was refused) and a result with
``isError: true`` (``mcp_tool_error``: the tool ran and its operation failed).
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

from activities.mcp._contract import McpConnectionContract, McpServerSnapshot
from activities.mcp._discover import list_all_tools, tools_digest
from activities.mcp._elicitation import ElicitationHandler, decline_all
from activities.mcp._errors import McpToolListChanged
from activities.mcp._schema import McpToolResult
from activities.mcp._session import ElicitationLog, open_session, run_sync
from activities.ports import ToolCall, ToolOutput
from domain.canonical import canonical_json
from domain.tools import ToolContract

ProgressListener = Callable[[float, float | None], None]
IDEMPOTENCY_META_KEY = "io.agentledger/idempotency-key"


class McpToolImplementation:
    def __init__(
        self,
        contract: ToolContract,
        connection: McpConnectionContract,
        snapshot: McpServerSnapshot,
        tool: str,
        *,
        elicitation_handler: ElicitationHandler = decline_all,
        progress_listener: ProgressListener | None = None,
    ) -> None:
        if tool not in connection.allowed_tools:
            raise ValueError(f"tool {tool!r} is not allowed by MCP contract {connection.name!r}")
        self.contract = contract
        self._connection = connection
        self._snapshot = snapshot
        self._tool = tool
        self._elicitation = elicitation_handler
        self._listener = progress_listener

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        return run_sync(lambda: self._execute(call))

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        # MCP has no way to ask a server whether a request ran. Writes are attempted once
        # (max_attempts=1) and carry the idempotency key in _meta for servers that honour it.
        return None

    async def _execute(self, call: ToolCall) -> ToolOutput:
        log: ElicitationLog = []
        async with open_session(self._connection, self._elicitation, log) as (session, _):
            await self._check_tool_list(session)
            try:
                with anyio.fail_after(self._connection.call_timeout_seconds):
                    result = await session.call_tool(
                        self._tool,
                        call.arguments.model_dump(mode="json"),
                        progress_callback=self._on_progress,
                        meta=_meta(call),
                    )
            except MCPError as exc:
                return _failed("mcp_protocol_error", f"JSON-RPC error {exc.code}: {exc.message}")
        return self._output(result, log)

    async def _check_tool_list(self, session: Any) -> None:
        current = tools_digest(await list_all_tools(session))
        if current != self._snapshot.tools_digest:
            raise McpToolListChanged(
                f"MCP server {self._connection.name!r} changed its tool list since the run's "
                f"manifest froze it ({self._snapshot.tools_digest} -> {current})"
            )

    async def _on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        # Progress keeps a long call alive under the activity's heartbeat timeout.
        if activity.in_activity():
            activity.heartbeat({"progress": progress, "total": total})
        if self._listener is not None:
            self._listener(progress, total)

    def _output(self, result: types.CallToolResult, log: ElicitationLog) -> ToolOutput:
        observation = McpToolResult(
            server=self._connection.name,
            tool=self._tool,
            text="\n".join(p.text for p in result.content if isinstance(p, types.TextContent)),
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
    return ToolOutput(
        status="failed",
        output={"error": code, "message": message},
        error_code=code,
        error_message=message,
    )
