"""MCP tools become ToolContracts: annotations may only make a tool stricter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentledger.activities.mcp import (
    McpContractError,
    McpToolListChanged,
    contracts_from_snapshot,
    discover,
)
from agentledger.domain.mcp import McpConnectionContract, McpServerSnapshot, StdioTransport

RPC_PEER = Path(__file__).with_name("_rpc_error_server.py")


@pytest.fixture(scope="module")
def snapshot(stdio_contract: McpConnectionContract) -> McpServerSnapshot:
    return discover(stdio_contract)


def rpc_peer_contract() -> McpConnectionContract:
    return McpConnectionContract(
        name="rpcpeer",
        transport=StdioTransport(command=sys.executable, args=(str(RPC_PEER),)),
        protocol_version="2025-11-25",
        server_name="agentledger-rpc-peer",
        server_version="0.1.0",
        allowed_tools=("refuse", "archive_ticket", "show_idempotency_key"),
    )


def test_read_only_tools_become_low_risk_reads(
    snapshot: McpServerSnapshot, stdio_contract: McpConnectionContract
) -> None:
    echo = contracts_from_snapshot(snapshot, stdio_contract)["everything__echo"]

    assert (echo.scope, echo.risk, echo.approval.kind) == ("read", "low", "never")
    assert echo.required_scope == "mcp.everything:read"
    assert echo.version.startswith("2.0.0+")


def test_tools_that_do_not_claim_read_only_are_consequential_and_need_approval(
    snapshot: McpServerSnapshot, stdio_contract: McpConnectionContract
) -> None:
    contracts = contracts_from_snapshot(snapshot, stdio_contract)

    for name in ("everything__toggle-simulated-logging", "everything__trigger-elicitation-request"):
        tool = contracts[name]
        assert (tool.scope, tool.risk, tool.approval.kind) == ("write", "consequential", "always")
        # MCP cannot say whether a request ran: attempted once, an unknown outcome in doubt.
        assert (tool.reconcilable, tool.on_partial_completion) == (False, "in_doubt")


def test_an_unannotated_tool_is_treated_as_consequential() -> None:
    peer = rpc_peer_contract()
    archive = contracts_from_snapshot(discover(peer), peer)["rpcpeer__archive_ticket"]

    assert (archive.scope, archive.risk, archive.approval.kind) == (
        "write",
        "consequential",
        "always",
    )


def test_only_allowed_tools_become_contracts(
    snapshot: McpServerSnapshot, stdio_contract: McpConnectionContract
) -> None:
    contracts = contracts_from_snapshot(snapshot, stdio_contract)

    assert len(contracts) == len(stdio_contract.allowed_tools) < len(snapshot.tools)
    assert "everything__gzip-file-as-resource" not in contracts


def test_arguments_are_validated_against_the_tools_own_schema(
    snapshot: McpServerSnapshot, stdio_contract: McpConnectionContract
) -> None:
    add = contracts_from_snapshot(snapshot, stdio_contract)["everything__get-sum"]
    listed = next(tool for tool in snapshot.tools if tool.name == "get-sum")

    assert add.input_model.model_validate({"a": 2, "b": 3}).model_dump() == {"a": 2, "b": 3}
    with pytest.raises(ValidationError, match="schema error"):
        add.input_model.model_validate({"a": "two"})
    assert add.input_model.model_json_schema() == listed.input_schema
    assert add.schema_hash.startswith("sha256:")


def test_an_allowed_tool_the_server_no_longer_lists_is_a_changed_tool_list(
    snapshot: McpServerSnapshot, stdio_contract: McpConnectionContract
) -> None:
    wants_more = stdio_contract.model_copy(update={"allowed_tools": ("echo", "delete-everything")})

    with pytest.raises(McpToolListChanged, match="delete-everything"):
        contracts_from_snapshot(snapshot, wants_more)


def test_a_snapshot_only_serves_its_own_contract(snapshot: McpServerSnapshot) -> None:
    with pytest.raises(McpContractError):
        contracts_from_snapshot(snapshot, rpc_peer_contract())
