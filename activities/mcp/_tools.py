"""MCP tools as ToolContracts: the same authority gate, receipts and approvals as native tools.

Annotations are hints from the server (the MCP spec calls them untrusted), so they can only make
a tool *stricter* here: a tool is a low-risk read only when it says ``readOnlyHint: true`` and
does not also claim to be destructive. Anything else, including no annotations, is a
consequential write that always needs approval. Grants in the pack still decide who may call it.
"""

from __future__ import annotations

import re

from activities.mcp._contract import McpConnectionContract, McpServerSnapshot, McpToolInfo
from activities.mcp._errors import McpContractError, McpToolListChanged
from activities.mcp._schema import McpToolResult, arguments_model
from domain.tools import ApprovalRule, ModelView, ToolContract


def contract_tool_name(server: str, tool: str) -> str:
    """``server__tool``: model tool names allow only ``[A-Za-z0-9_-]``."""
    return f"{server}__{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"


def is_read_only(tool: McpToolInfo) -> bool:
    hints = tool.annotations
    return hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True


def tool_contract(
    tool: McpToolInfo, snapshot: McpServerSnapshot, contract: McpConnectionContract
) -> ToolContract:
    read = is_read_only(tool)
    name = contract_tool_name(contract.name, tool.name)
    return ToolContract(
        name=name,
        # The version moves with the server and with any change to its tool list.
        version=f"{snapshot.server_version}+{snapshot.tools_digest.removeprefix('sha256:')[:12]}",
        description=tool.description,
        input_model=arguments_model(f"{name}_arguments", tool.input_schema),
        output_model=McpToolResult,
        scope="read" if read else "write",
        risk="low" if read else "consequential",
        required_scope=f"mcp.{contract.name}:{'read' if read else 'write'}",
        timeout_seconds=contract.call_timeout_seconds,
        # MCP has no idempotency protocol: a write is attempted once, never blindly retried.
        max_attempts=3 if read else 1,
        approval=ApprovalRule(kind="never" if read else "always"),
        model_view=ModelView(mode="full"),
        summary_template=f"{contract.name}: {tool.name} result",
    )


def contracts_from_snapshot(
    snapshot: McpServerSnapshot, contract: McpConnectionContract
) -> dict[str, ToolContract]:
    if snapshot.contract_name != contract.name:
        raise McpContractError(
            f"snapshot of {snapshot.contract_name!r} used with contract {contract.name!r}"
        )
    listed = {tool.name: tool for tool in snapshot.tools}
    missing = [name for name in contract.allowed_tools if name not in listed]
    if missing:
        raise McpToolListChanged(
            f"MCP server {contract.name!r} no longer lists allowed tools: {', '.join(missing)}"
        )
    built = (tool_contract(listed[name], snapshot, contract) for name in contract.allowed_tools)
    return {tool.name: tool for tool in built}
