"""The connection contract for one MCP server, and the snapshot discovery freezes from it.

Seed 003: "supports MCP" is too vague; a contract pins transport, protocol version and server
identity. Credentials appear only as environment variable *names*: the contract and the snapshot
go into the manifest and history, so a value must never be a field here.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, JsonValue, field_validator

from domain._model import Frozen

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SERVER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def _check_env_names(names: tuple[str, ...]) -> tuple[str, ...]:
    for name in names:
        if not _ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
    return names


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


class StreamableHttpTransport(Frozen):
    kind: Literal["streamable_http"] = "streamable_http"
    url: str

    @field_validator("url")
    @classmethod
    def _loopback_only(cls, url: str) -> str:
        # Remote servers need audience-bound auth (issue 8), not built yet: refuse them for now.
        host = urlsplit(url).hostname or ""
        if host != "localhost" and not _is_loopback_ip(host):
            raise ValueError(f"MCP HTTP URL must be on loopback for now, got host {host!r}")
        return url


def _is_loopback_ip(host: str) -> bool:
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
    credential_env: tuple[str, ...] = ()
    """Names of variables holding credentials, passed to a stdio server by name."""
    call_timeout_seconds: float = 30.0
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


class McpToolInfo(Frozen):
    """One tool as listed by the server: exactly the fields the digest covers."""

    name: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None = None
    annotations: dict[str, JsonValue] = Field(default_factory=dict)


class McpServerSnapshot(Frozen):
    """What discovery saw; frozen into the manifest at attempt start."""

    contract_name: str
    protocol_version: str
    server_name: str
    server_version: str
    capabilities: dict[str, JsonValue]
    tools: tuple[McpToolInfo, ...]
    tools_digest: str
