"""Discovery against the real server-everything, over stdio and Streamable HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentledger.activities.mcp import (
    McpProtocolMismatch,
    McpServerIdentityMismatch,
    McpServerUnavailable,
    discover,
)
from agentledger.domain.mcp import McpConnectionContract, StdioTransport, StreamableHttpTransport

# 13 base tools + 2 that the server adds because the client offers elicitation.
EVERYTHING_TOOLS = 15


@pytest.fixture(params=["stdio", "http"])
def contract(
    request: pytest.FixtureRequest,
    stdio_contract: McpConnectionContract,
) -> McpConnectionContract:
    if request.param == "stdio":
        return stdio_contract
    http: McpConnectionContract = request.getfixturevalue("http_contract")
    return http


def test_discovery_freezes_identity_protocol_capabilities_and_tools(
    contract: McpConnectionContract,
) -> None:
    snapshot = discover(contract)

    assert (snapshot.server_name, snapshot.server_version) == ("mcp-servers/everything", "2.0.0")
    assert snapshot.protocol_version == "2025-11-25"
    assert len(snapshot.tools) == EVERYTHING_TOOLS
    assert {"echo", "get-sum", "get-env", "trigger-long-running-operation"} <= {
        tool.name for tool in snapshot.tools
    }
    assert "tools" in snapshot.capabilities
    assert snapshot.tools_digest.startswith("sha256:")


def test_the_tool_list_digest_is_stable_across_discoveries(
    contract: McpConnectionContract,
) -> None:
    assert discover(contract).tools_digest == discover(contract).tools_digest


def test_both_transports_see_the_same_tool_list(
    stdio_contract: McpConnectionContract, http_contract: McpConnectionContract
) -> None:
    assert discover(stdio_contract).tools_digest == discover(http_contract).tools_digest


def test_a_protocol_version_other_than_the_pinned_one_is_refused(
    contract: McpConnectionContract,
) -> None:
    pinned_older = contract.model_copy(update={"protocol_version": "2025-06-18"})

    with pytest.raises(McpProtocolMismatch, match="negotiated protocol 2025-11-25") as caught:
        discover(pinned_older)
    assert caught.value.non_retryable


def test_a_server_with_another_identity_is_refused(contract: McpConnectionContract) -> None:
    impostor = contract.model_copy(update={"server_version": "1.9.9"})

    with pytest.raises(McpServerIdentityMismatch, match=r"expects mcp-servers/everything 1\.9\.9"):
        discover(impostor)


def test_a_server_that_cannot_start_is_unavailable_and_retryable(
    stdio_contract: McpConnectionContract, tmp_path: Path
) -> None:
    missing = StdioTransport(command=str(tmp_path / "no-such-server"))
    crashing = StdioTransport(command=sys.executable, args=("-c", "raise SystemExit(3)"))

    for transport in (missing, crashing):
        with pytest.raises(McpServerUnavailable) as caught:
            discover(stdio_contract.model_copy(update={"transport": transport}))
        assert not caught.value.non_retryable


def test_an_http_server_that_does_not_answer_is_unavailable(
    stdio_contract: McpConnectionContract,
) -> None:
    closed = StreamableHttpTransport(url="http://127.0.0.1:9/mcp")
    contract = stdio_contract.model_copy(update={"transport": closed, "call_timeout_seconds": 5})

    with pytest.raises(McpServerUnavailable):
        discover(contract)


def test_the_http_peer_listens_on_loopback_only(http_server: int) -> None:
    listening = _listening_addresses(http_server)

    assert listening == {"127.0.0.1"}


def _listening_addresses(port: int) -> set[str]:
    """Local addresses in LISTEN state for ``port``, from the kernel's socket tables."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(_decode(address))
    return found


def _decode(address: str) -> str:
    if len(address) == 8:
        return ".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0))
    return "::" if set(address) == {"0"} else address
