"""MCP client failures, typed once so they cross the activity boundary with a clear cause.

Every error is an ``ApplicationError`` whose ``type`` is the class name; ``non_retryable`` says
whether another attempt can help::

    ApplicationError
     └── McpClientError
          ├── McpServerUnavailable       cannot spawn/connect/initialize: retryable
          ├── McpProtocolMismatch        negotiated version is not the pinned one: final
          ├── McpServerIdentityMismatch  serverInfo name/version is not the pinned one: final
          ├── McpToolListChanged         tool-list digest drifted from the frozen one: final
          ├── McpAuthRejected            token not bound to the server, expired, or refused: final
          └── McpContractError           the contract itself is unusable (bad env name): final

A tool that runs and reports ``isError`` is not an exception: it is a failed ``ToolOutput``
(``mcp_tool_error``), distinct from a JSON-RPC error (``mcp_protocol_error``). Every message is
scrubbed of the secrets the worker holds (tokens, credential variables) as it is built.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from agentledger.activities.redaction import redact


class McpClientError(ApplicationError):
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(
            redact(message), type=type(self).__name__, non_retryable=not self.retryable
        )


class McpServerUnavailable(McpClientError):
    """A crashed or not-yet-listening server may come back; Temporal's retry policy bounds it.

    ``before_request``: the session never initialized, so no tool request can have been sent.
    """

    retryable = True

    def __init__(self, message: str, *, before_request: bool = False) -> None:
        super().__init__(message)
        self.before_request = before_request


class McpProtocolMismatch(McpClientError):
    pass


class McpServerIdentityMismatch(McpClientError):
    pass


class McpToolListChanged(McpClientError):
    pass


class McpAuthRejected(McpClientError):
    pass


class McpContractError(McpClientError):
    pass
