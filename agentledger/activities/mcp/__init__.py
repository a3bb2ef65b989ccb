"""MCP client: discovery, pinning and calls over the official ``mcp`` SDK (stdio, Streamable HTTP).

The contracts, pins and the ToolContracts derived from them are pure and live in ``domain.mcp``;
this package talks to servers. Discovery freezes a server's identity, protocol version,
capabilities and tool-list digest; calls re-check them and report drift as a recorded failure.
Errors are drawn as a tree in ``_errors``.
"""

from agentledger.activities.mcp._call import (
    IDEMPOTENCY_META_KEY,
    McpToolImplementation,
    ProgressListener,
)
from agentledger.activities.mcp._discover import discover, discover_async, tools_digest
from agentledger.activities.mcp._elicitation import (
    ElicitationAnswer,
    ElicitationHandler,
    PreapprovedElicitations,
    decline_all,
)
from agentledger.activities.mcp._errors import (
    McpAuthRejected,
    McpClientError,
    McpContractError,
    McpProtocolMismatch,
    McpServerIdentityMismatch,
    McpServerUnavailable,
    McpToolListChanged,
)
from agentledger.activities.mcp._tools import contracts_from_snapshot, pin_server
from agentledger.domain.elicitation import ElicitationRequest

__all__ = [
    "IDEMPOTENCY_META_KEY",
    "ElicitationAnswer",
    "ElicitationHandler",
    "ElicitationRequest",
    "McpAuthRejected",
    "McpClientError",
    "McpContractError",
    "McpProtocolMismatch",
    "McpServerIdentityMismatch",
    "McpServerUnavailable",
    "McpToolImplementation",
    "McpToolListChanged",
    "PreapprovedElicitations",
    "ProgressListener",
    "contracts_from_snapshot",
    "decline_all",
    "discover",
    "discover_async",
    "pin_server",
    "tools_digest",
]
