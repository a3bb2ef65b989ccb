"""MCP servers as pinned dependencies: connection contracts, what discovery froze, and the
ToolContracts derived from it (pure; the client that talks to servers is ``activities.mcp``).

Seed 003: "supports MCP" is too vague; a contract pins transport, protocol version and server
identity, and each server is a supply-chain dependency. Credentials appear only as environment
variable *names*: contracts and pins go into the manifest and history, so a value is never a
field here.

Tool annotations are hints from the server (the MCP spec calls them untrusted), so they can only
make a tool *stricter*: a tool is a low-risk read only when it says ``readOnlyHint: true`` and does
not also claim to be destructive. Anything else, including no annotations, is a consequential
write that always needs approval, is attempted once (MCP cannot say whether a request ran) and
whose unknown outcome stays in doubt. The manifest's grants still decide who may call what.

A tool's arguments are validated against the exact JSON Schema the server listed
(``domain.arguments``), so ``ToolContract.schema_hash`` and the definitions shown to a model are
the server's schema, byte for byte.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from agentledger.domain._model import Frozen
from agentledger.domain.arguments import arguments_model
from agentledger.domain.tools import ApprovalRule, ModelView, ToolContract

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SERVER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
TOOL_SEPARATOR = "__"


def _check_env_names(names: tuple[str, ...]) -> tuple[str, ...]:
    for name in names:
        if not _ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
    return names


# ------------------------------------------------------------------ connection contracts
class StdioTransport(Frozen):
    kind: Literal["stdio"] = "stdio"
    command: str
    args: tuple[str, ...] = ()
    env_allow: tuple[str, ...] = ()
    """Names of parent variables passed through; the server sees nothing else (but the SDK's
    own short safe list: HOME, PATH, SHELL, TERM, USER, LOGNAME)."""

    @field_validator("env_allow")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return _check_env_names(names)


class BearerToken(Frozen):
    """An access token issued for one MCP server, read from a variable when a session opens.

    ``audience`` is the resource the token is bound to (RFC 8707: the server's canonical URL,
    or a parent of it); it defaults to the server URL itself. A ``jwt`` token's ``aud`` and
    ``exp`` claims are checked before it is sent, so a token issued for another resource or
    already expired never leaves the worker. An ``opaque`` token cannot be read by the client:
    the operator vouches for its binding and the server must check it. The token is only ever
    sent to this server's origin, and agentledger never passes a caller's token through.
    """

    token_env: str
    audience: str | None = None
    format: Literal["jwt", "opaque"] = "jwt"

    @field_validator("token_env")
    @classmethod
    def _name(cls, name: str) -> str:
        return _check_env_names((name,))[0]


class StreamableHttpTransport(Frozen):
    """A server reached over Streamable HTTP: https with a bound token, or loopback."""

    kind: Literal["streamable_http"] = "streamable_http"
    url: str
    auth: BearerToken | None = None

    @model_validator(mode="after")
    def _reached_safely(self) -> StreamableHttpTransport:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
            raise ValueError(f"MCP server URL {self.url!r} must be http(s), with a host, no #")
        if not _is_loopback(parts.hostname):
            if parts.scheme != "https":
                raise ValueError(f"MCP server {parts.hostname!r} is off loopback: use https")
            if self.auth is None:
                raise ValueError(
                    f"MCP server {parts.hostname!r} is off loopback: it needs a bearer token "
                    "bound to it (auth)"
                )
        if self.auth is not None and not resource_covers(self.audience, self.url):
            raise ValueError(
                f"token audience {self.audience!r} does not cover MCP server {self.url!r}"
            )
        return self

    @property
    def audience(self) -> str:
        """The resource a token for this server must be bound to (the URL unless set)."""
        declared = self.auth.audience if self.auth is not None else None
        return canonical_resource(declared or self.url)


def canonical_resource(url: str) -> str:
    """RFC 8707 form of a server URL: lower-case scheme and host, no fragment."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()))


def resource_covers(audience: str, url: str) -> bool:
    """A token for ``audience`` may be sent to ``url``: same origin, path at or below it."""
    granted, wanted = urlsplit(canonical_resource(audience)), urlsplit(canonical_resource(url))
    if (granted.scheme, granted.netloc) != (wanted.scheme, wanted.netloc):
        return False
    return (wanted.path.rstrip("/") + "/").startswith(granted.path.rstrip("/") + "/")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


Transport = Annotated[StdioTransport | StreamableHttpTransport, Field(discriminator="kind")]


class McpConnectionContract(Frozen):
    name: str
    transport: Transport
    protocol_version: str
    server_name: str
    server_version: str
    allowed_tools: tuple[str, ...] = ()
    """Tools that may become ToolContracts; empty means none (deny by default)."""
    steps: tuple[str, ...] = ()
    """Steps whose packets may offer the allowed tools (the manifest grants them there)."""
    credential_env: tuple[str, ...] = ()
    """Names of variables holding credentials, passed to a stdio server by name."""
    call_timeout_seconds: float = 30.0
    heartbeat_seconds: float = 10.0
    """A call in flight heartbeats (with any progress the server reports) at a third of this;
    a worker that dies mid-call is noticed after it and a read is retried elsewhere."""
    max_result_bytes: int = 64_000

    @field_validator("credential_env")
    @classmethod
    def _credential_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return _check_env_names(names)

    @field_validator("name")
    @classmethod
    def _tool_prefix_safe(cls, name: str) -> str:
        # The name prefixes tool names shown to models, whose tool names allow only [A-Za-z0-9_-].
        if not _SERVER_NAME.match(name):
            raise ValueError(f"MCP server name {name!r} must match {_SERVER_NAME.pattern}")
        return name


# ------------------------------------------------------------------ what discovery froze
class McpToolInfo(Frozen):
    """One tool as listed by the server: exactly the fields the digest covers."""

    name: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None = None
    annotations: dict[str, JsonValue] = Field(default_factory=dict)


class McpServerSnapshot(Frozen):
    """What discovery saw: identity, negotiated protocol and capabilities, the tool list."""

    contract_name: str
    protocol_version: str
    server_name: str
    server_version: str
    capabilities: dict[str, JsonValue]
    tools: tuple[McpToolInfo, ...]
    tools_digest: str


class McpServerPin(Frozen):
    """One server as an attempt's manifest pins it: how to reach it and what it was."""

    connection: McpConnectionContract
    snapshot: McpServerSnapshot

    @model_validator(mode="after")
    def _consistent(self) -> McpServerPin:
        if self.snapshot.contract_name != self.connection.name:
            raise ValueError(
                f"snapshot of {self.snapshot.contract_name!r} pinned with contract "
                f"{self.connection.name!r}"
            )
        listed = {tool.name for tool in self.snapshot.tools}
        missing = [name for name in self.connection.allowed_tools if name not in listed]
        if missing:
            raise ValueError(
                f"MCP server {self.connection.name!r} does not list allowed tools: "
                f"{', '.join(missing)}"
            )
        return self

    def tool(self, name: str) -> McpToolInfo:
        return next(tool for tool in self.snapshot.tools if tool.name == name)


# ------------------------------------------------------------------ tools as contracts
class McpToolResult(BaseModel):
    """An MCP result as an observation: data the model may read, never instructions."""

    model_config = ConfigDict(frozen=True)

    trust: str = "untrusted_observation"
    server: str
    tool: str
    text: str = ""
    structured: dict[str, JsonValue] | None = None
    other_parts: list[str] = []
    elicitations: list[dict[str, JsonValue]] = []


def contract_tool_name(server: str, tool: str) -> str:
    """``server__tool``: model tool names allow only ``[A-Za-z0-9_-]``."""
    return f"{server}{TOOL_SEPARATOR}{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"


def is_read_only(tool: McpToolInfo) -> bool:
    hints = tool.annotations
    return hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True


def tool_contract(tool: McpToolInfo, pin: McpServerPin) -> ToolContract:
    read, connection = is_read_only(tool), pin.connection
    name = contract_tool_name(connection.name, tool.name)
    return ToolContract(
        name=name,
        # The version moves with the server and with any change to its tool list.
        version=f"{pin.snapshot.server_version}+"
        f"{pin.snapshot.tools_digest.removeprefix('sha256:')[:12]}",
        description=tool.description,
        input_model=arguments_model(f"{name}_arguments", tool.input_schema),
        output_model=McpToolResult,
        scope="read" if read else "write",
        risk="low" if read else "consequential",
        required_scope=f"mcp.{connection.name}:{'read' if read else 'write'}",
        timeout_seconds=connection.call_timeout_seconds,
        heartbeat_seconds=connection.heartbeat_seconds,
        # MCP has no way to ask a server whether a request ran: a write is attempted once.
        reconcilable=read,
        approval=ApprovalRule(kind="never" if read else "always"),
        model_view=ModelView(mode="full"),
        summary_template=f"{connection.name}: {tool.name} result",
    )


def pin_contracts(pin: McpServerPin) -> dict[str, ToolContract]:
    """The allowed tools of one pinned server, keyed by their contract names."""
    built = (tool_contract(pin.tool(name), pin) for name in pin.connection.allowed_tools)
    return {contract.name: contract for contract in built}


def pin_contracts_names(pin: McpServerPin) -> tuple[str, ...]:
    return tuple(contract_tool_name(pin.connection.name, t) for t in pin.connection.allowed_tools)


def pinned_tool(pins: tuple[McpServerPin, ...], contract_name: str) -> tuple[McpServerPin, str]:
    """The pin and MCP tool name behind a contract name; KeyError when no pin serves it."""
    for pin in pins:
        for tool in pin.connection.allowed_tools:
            if contract_tool_name(pin.connection.name, tool) == contract_name:
                return pin, tool
    raise KeyError(contract_name)
