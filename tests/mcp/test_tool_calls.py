"""Calling real MCP tools: observations, distinct error kinds, drift, size, secrets, progress."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from temporalio.testing import ActivityEnvironment

from agentledger.activities.mcp import (
    McpToolImplementation,
    PreapprovedElicitations,
    discover,
    pin_server,
)
from agentledger.activities.ports import ToolOutput
from agentledger.domain.mcp import (
    McpConnectionContract,
    McpServerSnapshot,
    contract_tool_name,
    pin_contracts,
)
from tests.mcp.conftest import SECRET_NAME, tool_call
from tests.mcp.test_tool_contracts import rpc_peer_contract

Build = Callable[..., McpToolImplementation]


@pytest.fixture(scope="module")
def engine() -> Engine:
    # The port hands every tool the system-of-record engine; MCP tools do not touch it.
    return create_engine("sqlite://")


@pytest.fixture(params=["stdio", "http"])
def connection(request: pytest.FixtureRequest) -> McpConnectionContract:
    name = "stdio_contract" if request.param == "stdio" else "http_contract"
    found: McpConnectionContract = request.getfixturevalue(name)
    return found


def builder(connection: McpConnectionContract, snapshot: McpServerSnapshot | None = None) -> Build:
    pin = pin_server(snapshot or discover(connection), connection)
    contracts = pin_contracts(pin)

    def build(tool: str, **options: Any) -> McpToolImplementation:
        contract = contracts[contract_tool_name(connection.name, tool)]
        return McpToolImplementation(contract, pin, tool, **options)

    return build


def call(
    tool: McpToolImplementation, engine: Engine, key: str | None = None, **args: Any
) -> ToolOutput:
    arguments = tool.contract.input_model.model_validate(args)
    return tool.execute(engine, tool_call(arguments, key))


def elicitations(out: ToolOutput) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], out.output["elicitations"])


def test_a_read_tool_returns_an_untrusted_observation(
    connection: McpConnectionContract, engine: Engine
) -> None:
    out = call(builder(connection)("echo"), engine, message="hello")

    assert out.status == "succeeded"
    assert out.output["text"] == "Echo: hello"
    assert out.output["trust"] == "untrusted_observation"
    assert out.output["server"] == "everything"


def test_a_changed_tool_list_fails_the_call_before_it_runs(
    connection: McpConnectionContract, engine: Engine
) -> None:
    frozen = discover(connection)
    drifted = frozen.model_copy(update={"tools_digest": "sha256:" + "0" * 64})
    echo = builder(connection, drifted)("echo")

    out = call(echo, engine, message="hello")

    # Never a silent swap: a recorded failure the run's policy handles, and nothing was sent.
    assert (out.status, out.error_code) == ("failed", "mcp_tool_list_changed")
    assert "changed its tool list" in (out.error_message or "")


def test_a_tool_execution_error_is_a_failed_receipt_not_a_protocol_error(
    stdio_contract: McpConnectionContract, engine: Engine
) -> None:
    add = builder(stdio_contract)("get-sum")
    # Bypass the client's schema check so the server itself reports the bad input (isError).
    arguments = add.contract.input_model.model_construct(a="two", b=3)

    out = add.execute(engine, tool_call(arguments))

    assert (out.status, out.error_code) == ("failed", "mcp_tool_error")
    assert "Invalid arguments" in (out.error_message or "")


def test_a_json_rpc_error_is_a_protocol_error(engine: Engine) -> None:
    peer = rpc_peer_contract()
    refuse = builder(peer)("refuse")

    out = call(refuse, engine, reason="policy")

    assert (out.status, out.error_code) == ("failed", "mcp_protocol_error")
    assert out.error_message == "JSON-RPC error -32602: refused: policy"


def test_the_runtime_idempotency_key_travels_in_request_meta(engine: Engine) -> None:
    show = builder(rpc_peer_contract())("show_idempotency_key")

    out = call(show, engine, key="run1:op7")

    assert out.output["text"] == "run1:op7"


def test_a_result_over_the_size_limit_is_refused(
    stdio_contract: McpConnectionContract, engine: Engine
) -> None:
    small = stdio_contract.model_copy(update={"max_result_bytes": 300})

    out = call(builder(small)("echo"), engine, message="x" * 1000)

    assert (out.status, out.error_code) == ("failed", "result_too_large")
    assert "x" * 100 not in json.dumps(out.output)


def test_a_stdio_server_sees_no_parent_secrets(
    stdio_contract: McpConnectionContract, engine: Engine, parent_secret: str
) -> None:
    out = call(builder(stdio_contract)("get-env"), engine)

    seen = json.loads(str(out.output["text"]))
    assert SECRET_NAME not in seen and parent_secret not in str(out.output)
    # The SDK's fixed safe list, plus the locale a C-locale Python coerces for its children.
    assert set(seen) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LC_CTYPE"}


def test_a_named_credential_reaches_the_server_but_never_the_contract_or_the_result(
    stdio_contract: McpConnectionContract, engine: Engine, parent_secret: str
) -> None:
    with_credential = stdio_contract.model_copy(update={"credential_env": (SECRET_NAME,)})

    out = call(builder(with_credential)("get-env"), engine)

    # The server echoed exactly the secret (only that value is scrubbed to the marker), and the
    # echo was scrubbed before it became a tool result.
    assert json.loads(str(out.output["text"]))[SECRET_NAME] == "[redacted]"
    assert parent_secret not in json.dumps(out.output)
    assert parent_secret not in with_credential.model_dump_json()


def test_progress_reaches_the_listener(connection: McpConnectionContract, engine: Engine) -> None:
    seen: list[tuple[float, float | None]] = []
    long_op = builder(connection)(
        "trigger-long-running-operation", progress_listener=lambda p, t: seen.append((p, t))
    )

    out = call(long_op, engine, key="idem-progress", duration=0.3, steps=3)

    assert out.status == "succeeded"
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_progress_becomes_activity_heartbeats(
    stdio_contract: McpConnectionContract, engine: Engine
) -> None:
    long_op = builder(stdio_contract)("trigger-long-running-operation")
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)

    out = env.run(call, long_op, engine, duration=0.3, steps=3)

    assert out.status == "succeeded"
    assert [beat[0]["progress"] for beat in beats] == [1, 2, 3]


def test_an_elicitation_is_declined_and_recorded_without_a_handler(
    connection: McpConnectionContract, engine: Engine
) -> None:
    out = call(builder(connection)("trigger-elicitation-request"), engine, key="idem-1")

    assert out.status == "succeeded"
    [asked] = elicitations(out)
    assert asked["action"] == "decline" and str(asked["digest"]).startswith("sha256:")
    assert "declined" in str(out.output["text"])


def test_an_approved_elicitation_is_answered_with_the_approved_content(
    stdio_contract: McpConnectionContract, engine: Engine
) -> None:
    build = builder(stdio_contract)
    first = call(build("trigger-elicitation-request"), engine, key="idem-2")
    digest = str(elicitations(first)[0]["digest"])
    approved = PreapprovedElicitations({digest: {"name": "Ada Lovelace"}})

    out = call(build("trigger-elicitation-request", elicitation_handler=approved), engine)

    assert elicitations(out)[0]["action"] == "accept"
    assert "Ada Lovelace" in str(out.output["text"])
