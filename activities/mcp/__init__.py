"""MCP client: connection contracts, discovery, and MCP tools as governed ToolContracts.

Built on the official ``mcp`` SDK (stdio and Streamable HTTP). Discovery freezes a server's
identity, protocol version, capabilities and tool-list digest; calls re-check them and fail with
a typed error on drift. Errors are drawn as a tree in ``_errors``.
"""

from activities.mcp._call import IDEMPOTENCY_META_KEY, McpToolImplementation, ProgressListener
from activities.mcp._contract import (
    McpConnectionContract,
    McpServerSnapshot,
    McpToolInfo,
    StdioTransport,
    StreamableHttpTransport,
)
from activities.mcp._discover import discover, discover_async, tools_digest
from activities.mcp._elicitation import (
    ElicitationAnswer,
    ElicitationHandler,
    ElicitationRequest,
    PreapprovedElicitations,
    decline_all,
)
from activities.mcp._errors import (
    McpClientError,
    McpContractError,
    McpProtocolMismatch,
    McpServerIdentityMismatch,
    McpServerUnavailable,
    McpToolListChanged,
)
from activities.mcp._schema import McpArguments, McpToolResult
from activities.mcp._tools import contract_tool_name, contracts_from_snapshot, is_read_only

__all__ = [
    "IDEMPOTENCY_META_KEY",
    "ElicitationAnswer",
    "ElicitationHandler",
    "ElicitationRequest",
    "McpArguments",
    "McpClientError",
    "McpConnectionContract",
    "McpContractError",
    "McpProtocolMismatch",
    "McpServerIdentityMismatch",
    "McpServerSnapshot",
    "McpServerUnavailable",
    "McpToolImplementation",
    "McpToolInfo",
    "McpToolListChanged",
    "McpToolResult",
    "PreapprovedElicitations",
    "ProgressListener",
    "StdioTransport",
    "StreamableHttpTransport",
    "contract_tool_name",
    "contracts_from_snapshot",
    "decline_all",
    "discover",
    "discover_async",
    "is_read_only",
    "tools_digest",
]
