"""Bearer tokens for MCP servers over HTTP, against a real resource server that checks them.

The peer (``_token_server.py``: the Python SDK's server with a token verifier) accepts only an
HS256 JWT signed with its key, unexpired, whose audience is its own URL. The client sends a token
only when its ``aud`` covers the server and it has not expired, and never writes its value down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from agentledger.activities.mcp import McpAuthRejected, McpContractError, discover
from agentledger.activities.mcp._auth import jwt_claims_problem
from agentledger.domain.mcp import BearerToken, McpConnectionContract, StreamableHttpTransport
from bench._stack import free_port
from tests.mcp._token_server import SIGNING_KEY_ENV, mint
from tests.mcp.conftest import _wait_listening
from tests.mcp.test_tool_calls import builder, call

TOKEN_ENV = "AGENTLEDGER_TEST_MCP_TOKEN"
SIGNING_KEY = "test-signing-key-not-a-secret-elsewhere"
SERVER = Path(__file__).with_name("_token_server.py")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), SIGNING_KEY_ENV: SIGNING_KEY}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def contract(url: str, **auth: object) -> McpConnectionContract:
    return McpConnectionContract(
        name="tokened",
        transport=StreamableHttpTransport(url=url, auth=BearerToken(token_env=TOKEN_ENV, **auth)),
        protocol_version="2025-11-25",
        server_name="agentledger-token-peer",
        server_version="0.1.0",
        allowed_tools=("whoami",),
    )


def token(aud: str | list[str], *, key: str = SIGNING_KEY, ttl: float = 300) -> str:
    return mint(key, aud=aud, sub="agentledger-worker", exp=time.time() + ttl)


def test_a_token_bound_to_the_server_is_sent_and_never_written_down(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = token(url)
    monkeypatch.setenv(TOKEN_ENV, value)
    tokened = contract(url)

    snapshot = discover(tokened)
    out = call(builder(tokened, snapshot)("whoami"), create_engine("sqlite://"))

    assert out.output["text"] == "subject=agentledger-worker"
    assert isinstance(tokened.transport, StreamableHttpTransport)
    assert tokened.transport.audience == url
    assert value not in tokened.model_dump_json() + snapshot.model_dump_json()
    assert value not in json.dumps(out.output)


def test_a_token_for_another_resource_never_leaves_the_worker(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = token("https://other-server.example/mcp")
    monkeypatch.setenv(TOKEN_ENV, value)

    with pytest.raises(McpAuthRejected, match="does not cover") as refused:
        discover(contract(url))

    assert not refused.value.retryable and value not in str(refused.value)


def test_an_expired_token_is_not_sent(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, token(url, ttl=-60))

    with pytest.raises(McpAuthRejected, match="expired"):
        discover(contract(url))


def test_a_token_the_server_refuses_is_a_final_auth_error(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Right audience, wrong signature: only the server can tell.
    monkeypatch.setenv(TOKEN_ENV, token(url, key="a-key-the-server-does-not-know"))

    with pytest.raises(McpAuthRejected, match="HTTP 401"):
        discover(contract(url))


def test_an_opaque_token_is_the_servers_to_check(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "opaque-token-from-a-vault")

    with pytest.raises(McpAuthRejected, match="not a JWT"):
        discover(contract(url))
    with pytest.raises(McpAuthRejected, match="HTTP 401"):
        discover(contract(url, format="opaque"))


def test_a_missing_token_variable_is_a_contract_error(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)

    with pytest.raises(McpContractError, match=TOKEN_ENV):
        discover(contract(url))


def test_a_call_refused_for_its_token_is_a_recorded_failure_not_a_retry(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, token(url))
    tokened = contract(url)
    whoami = builder(tokened, discover(tokened))("whoami")
    monkeypatch.setenv(TOKEN_ENV, token(url, key="rotated-away"))

    out = call(whoami, create_engine("sqlite://"))

    assert (out.status, out.error_code) == ("failed", "mcp_auth_rejected")


@pytest.mark.parametrize(
    ("server_url", "problem"),
    [
        ("http://mcp.example.com/mcp", "use https"),
        ("https://mcp.example.com/mcp", "needs a bearer token"),
        ("ftp://127.0.0.1/mcp", "must be http"),
    ],
)
def test_remote_servers_need_https_and_a_bound_token(server_url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        StreamableHttpTransport(url=server_url)


def test_a_token_audience_must_cover_the_server_url() -> None:
    remote = StreamableHttpTransport(
        url="https://MCP.example.com/tenant/a/mcp",
        auth=BearerToken(token_env="T", audience="https://mcp.example.com/tenant/a"),
    )
    assert remote.auth is not None
    with pytest.raises(ValueError, match="does not cover"):
        StreamableHttpTransport(
            url="https://mcp.example.com/tenant/ab/mcp",
            auth=BearerToken(token_env="T", audience="https://mcp.example.com/tenant/a"),
        )


def test_claims_checks_never_quote_the_token() -> None:
    aud = "https://mcp.example.com/mcp"
    assert jwt_claims_problem(token(aud), aud, datetime.now(UTC)) is None
    assert jwt_claims_problem(token([aud, "x"]), aud, datetime.now(UTC)) is None
    unbound = mint(SIGNING_KEY, aud=[], sub="s", exp=time.time() + 60)
    assert "no audience" in str(jwt_claims_problem(unbound, aud, datetime.now(UTC)))
    assert "payload" in str(jwt_claims_problem("a.%%%.c", aud, datetime.now(UTC)))
