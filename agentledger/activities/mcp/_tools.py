"""Pinning a discovered server: the checks that turn a snapshot into a manifest's pin."""

from __future__ import annotations

from agentledger.activities.mcp._errors import McpContractError, McpToolListChanged
from agentledger.domain.mcp import (
    McpConnectionContract,
    McpServerPin,
    McpServerSnapshot,
    pin_contracts,
)
from agentledger.domain.tools import ToolContract


def pin_server(snapshot: McpServerSnapshot, connection: McpConnectionContract) -> McpServerPin:
    """The pin for one server, with the typed error a worker reports when it cannot be made."""
    if snapshot.contract_name != connection.name:
        raise McpContractError(
            f"snapshot of {snapshot.contract_name!r} used with contract {connection.name!r}"
        )
    listed = {tool.name for tool in snapshot.tools}
    missing = [name for name in connection.allowed_tools if name not in listed]
    if missing:
        raise McpToolListChanged(
            f"MCP server {connection.name!r} no longer lists allowed tools: {', '.join(missing)}"
        )
    return McpServerPin(connection=connection, snapshot=snapshot)


def contracts_from_snapshot(
    snapshot: McpServerSnapshot, connection: McpConnectionContract
) -> dict[str, ToolContract]:
    return pin_contracts(pin_server(snapshot, connection))
