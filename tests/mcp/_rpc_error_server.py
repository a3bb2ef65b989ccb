"""A second real MCP peer (the Python SDK's own server, over stdio) for what server-everything
never does: answer ``tools/call`` with a JSON-RPC error, and list a tool with no annotations.

Run as ``python tests/mcp/_rpc_error_server.py``.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

server = MCPServer(name="agentledger-rpc-peer", version="0.1.0")


@server.tool()
def refuse(reason: str) -> str:
    """Always refuses at the protocol level."""
    raise MCPError(code=-32602, message=f"refused: {reason}")


@server.tool()
def archive_ticket(ticket_id: str) -> str:
    """Has no annotations, so the client must treat it as consequential."""
    return f"archived {ticket_id}"


@server.tool()
def show_idempotency_key(ctx: Context) -> str:
    """Echoes the idempotency key the client put in the request's _meta."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("io.agentledger/idempotency-key"))


if __name__ == "__main__":
    server.run("stdio")
