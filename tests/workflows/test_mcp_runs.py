"""MCP tools inside real runs: server-everything over stdio, pinned into the manifest at attempt
start and called through the same gate, approvals and receipts as native tools."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.config import Settings
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack, register_pack
from agentledger.domain import events as ev
from agentledger.domain.events import RunEvent
from agentledger.domain.mcp import StreamableHttpTransport
from bench import _mcp_pack as mcp
from tests._temporal import Harness
from tests.mcp.conftest import http_server  # noqa: F401 - a fixture this module uses

register_pack(mcp.NAME, "bench._mcp_pack:PACK")
# The same server, expected under another version: the pin cannot be made.
MISPINNED = mcp.build_pack(
    "mcp_mispinned", mcp.connection().model_copy(update={"server_version": "9.9.9"})
)
register_pack("mcp_mispinned", "tests.workflows.test_mcp_runs:MISPINNED")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _server_installed() -> None:
    if not mcp.SERVER_JS.exists():
        pytest.fail("MCP run tests need `npm ci --prefix infra/mcp` (./run.sh does it)")


async def start(harness: Harness, request: str, principal: Any = mcp.OPERATOR) -> str:
    order = get_pack(mcp.NAME).make_work_order(request, principal)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    return handle.id


def of(events: list[RunEvent], kind: type[ev.Envelope]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_a_read_runs_through_the_gate_under_a_pinned_server(harness: Harness) -> None:
    run_id = await start(harness, mcp.script(mcp.call("echo", message="hi")), mcp.READER)
    events = await harness.finish(run_id)

    [authorised] = of(events, ev.ToolCallAuthorised)
    [receipt] = [e.receipt for e in of(events, ev.ToolReceiptRecorded)]
    assert authorised.tool == "everything__echo" and receipt.status == "succeeded"
    assert receipt.model_view["text"] == "Echo: hi"
    assert receipt.model_view["trust"] == "untrusted_observation"
    manifest = harness.runtime.ledger.get_manifest(events[0].manifest_hash)
    assert manifest is not None
    [pin] = manifest.mcp_servers
    assert (pin.snapshot.server_name, pin.snapshot.protocol_version) == (
        "mcp-servers/everything",
        "2025-11-25",
    )
    assert pin.snapshot.tools_digest.startswith("sha256:")
    assert authorised.tool_version.endswith(pin.snapshot.tools_digest[7:19])
    assert of(events, ev.RunCompleted)


@pytest.fixture
def http_pack(http_server: int) -> str:  # noqa: F811 - the imported fixture
    """The same pack with server-everything over Streamable HTTP on 127.0.0.1."""
    url = f"http://127.0.0.1:{http_server}/mcp"
    connection = mcp.connection().model_copy(update={"transport": StreamableHttpTransport(url=url)})
    globals()["HTTP_PACK"] = mcp.build_pack("mcp_http", connection)
    register_pack("mcp_http", "tests.workflows.test_mcp_runs:HTTP_PACK")
    return "mcp_http"


async def test_over_streamable_http_a_read_runs_and_a_write_waits_for_a_human(
    harness: Harness, http_pack: str
) -> None:
    request = mcp.script(mcp.call("get-sum", a=2, b=3), mcp.call("toggle-simulated-logging"))
    order = get_pack(http_pack).make_work_order(request, mcp.OPERATOR)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    state = await harness.until_approval_or_end(handle.id)
    [approval_id] = state.pending_approvals
    await harness.decide(handle.id, approval_id, mcp.APPROVER.user_id)
    events = await harness.finish(handle.id)

    manifest = harness.runtime.ledger.get_manifest(events[0].manifest_hash)
    assert manifest is not None
    assert manifest.mcp_servers[0].connection.transport.kind == "streamable_http"
    receipts = [e.receipt for e in of(events, ev.ToolReceiptRecorded)]
    assert [(r.tool, r.status) for r in receipts] == [
        ("everything__get-sum", "succeeded"),
        ("everything__toggle-simulated-logging", "succeeded"),
    ]
    assert "5" in str(receipts[0].model_view["text"])
    [authorised_write] = [e for e in of(events, ev.ToolCallAuthorised) if e.approval_id]
    assert authorised_write.tool == "everything__toggle-simulated-logging"


async def test_a_server_that_is_not_the_pinned_one_ends_the_run_before_it_starts(
    harness: Harness,
) -> None:
    order = MISPINNED.make_work_order(mcp.script(mcp.call("echo", message="hi")), mcp.READER)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    events = await harness.finish(handle.id)

    assert [e.kind for e in events] == ["run_started", "run_failed"]
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed) and failed.reason_code == "preparation_failed"
    assert "McpServerIdentityMismatch" in failed.message and "9.9.9" in failed.message


async def test_a_destructive_call_without_the_write_scope_is_denied_and_recorded(
    harness: Harness,
) -> None:
    request = mcp.script(mcp.call("toggle-simulated-logging"), mcp.call("echo", message="x"))
    events = await harness.finish(await start(harness, request, mcp.READER))

    [denied] = of(events, ev.ToolCallDenied)
    assert denied.tool == "everything__toggle-simulated-logging"
    assert denied.reason_code == "scope_missing"
    assert [e.tool for e in of(events, ev.ToolCallAuthorised)] == ["everything__echo"]


async def test_an_unannotated_or_writing_tool_waits_for_a_human(harness: Harness) -> None:
    run_id = await start(harness, mcp.script(mcp.call("toggle-simulated-logging")))
    state = await harness.until_approval_or_end(run_id)
    [approval_id] = state.pending_approvals
    await harness.decide(run_id, approval_id, mcp.APPROVER.user_id, approve=False, reason="no")
    events = await harness.finish(run_id)

    assert of(events, ev.ApprovalRejected) and not of(events, ev.ToolCallAuthorised)


async def _elicitation_pending(harness: Harness) -> tuple[str, str, Any]:
    """Run the elicitation tool: grant the call, then stop where the server's question waits."""
    run_id = await start(harness, mcp.script(mcp.call("trigger-elicitation-request")))
    state = await harness.until_approval_or_end(run_id)
    [call_approval] = state.pending_approvals
    await harness.decide(run_id, call_approval, mcp.APPROVER.user_id)
    state = await harness.until_approval_or_end(run_id)
    [(approval_id, pending)] = state.pending_approvals.items()
    assert pending.elicitation is not None
    assert pending.operation_id in state.in_flight  # the operation stays open meanwhile
    return run_id, approval_id, pending


async def test_an_elicitation_becomes_an_approval_and_a_rejection_keeps_the_declined_result(
    harness: Harness,
) -> None:
    run_id, approval_id, pending = await _elicitation_pending(harness)
    await harness.decide(run_id, approval_id, mcp.APPROVER.user_id, approve=False, reason="no")
    events = await harness.finish(run_id)

    [receipt] = [e.receipt for e in of(events, ev.ToolReceiptRecorded)]
    assert receipt.model_view["elicitations"][0]["action"] == "decline"
    assert pending.elicitation.message


async def test_an_accepted_elicitation_reruns_the_call_with_exactly_the_approved_answer(
    harness: Harness,
) -> None:
    run_id, approval_id, _ = await _elicitation_pending(harness)
    approver = mcp.APPROVER.user_id
    with pytest.raises(Refused, match="requested schema"):
        await client_ops.decide(
            harness.client,
            run_id,
            approval_id,
            approver,
            issuer=harness.issuer,
            approve=True,
            content={"name": 7},
        )
    await client_ops.decide(
        harness.client,
        run_id,
        approval_id,
        approver,
        issuer=harness.issuer,
        approve=True,
        content={"name": "Ada Lovelace"},
    )
    events = await harness.finish(run_id)

    [granted] = [e for e in of(events, ev.ApprovalGranted) if e.content is not None]
    assert granted.content == {"name": "Ada Lovelace"}
    assert [r.reason_code for r in of(events, ev.ApprovalAttemptRefused)] == [
        "invalid_elicitation_content"
    ]
    [receipt] = [e.receipt for e in of(events, ev.ToolReceiptRecorded)]
    assert receipt.model_view["elicitations"][0]["action"] == "accept"
    assert "Ada Lovelace" in str(receipt.model_view["text"])
    # The re-run is a new request: a server honouring keys must not replay the declined one.
    [authorised] = of(events, ev.ToolCallAuthorised)
    assert receipt.idempotency_key is not None and authorised.idempotency_key is not None
    assert receipt.idempotency_key.startswith(f"{authorised.idempotency_key}:elicitation:")


def _worker(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "AGENTLEDGER_TEMPORAL_ADDRESS": settings.address,
        "AGENTLEDGER_DATABASE_URL": settings.ledger_url,
        "AGENTLEDGER_TASK_QUEUE": settings.task_queue,
        "AGENTLEDGER_DATA_DIR": str(settings.data_dir),
        "AGENTLEDGER_PACKS": f"{mcp.NAME}=bench._mcp_pack:PACK",
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "agentledger.cli", "worker"],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
        )


async def test_a_worker_killed_during_a_long_mcp_read_is_replaced_and_the_call_completes(
    harness: Harness, tmp_path: Path
) -> None:
    """The in-process worker only serves other queues' work here: this run's queue is served by
    subprocess workers, the first SIGKILLed while the tool is running (its heartbeats stop)."""
    long_op = mcp.call("trigger-long-running-operation", duration=8, steps=8)
    queue = f"{harness.settings.task_queue}-sub"
    sub = replace(harness.settings, task_queue=queue)
    order = get_pack(mcp.NAME).make_work_order(mcp.script(long_op), mcp.READER)
    handle = await client_ops.start_run(harness.client, queue, order, issuer=harness.issuer)
    first = _worker(sub, tmp_path / "worker.log")
    try:
        await _until(lambda: _authorised(harness, handle.id), "the long call to start")
        await asyncio.sleep(2.0)  # well inside the 8 s call
        first.send_signal(signal.SIGKILL)
        first.wait()
        second = _worker(sub, tmp_path / "worker.log")
        try:
            await asyncio.wait_for(handle.result(), timeout=120)
        finally:
            second.terminate()
            second.wait(timeout=20)
    finally:
        if first.poll() is None:
            first.kill()
    events = harness.runtime.ledger.read(handle.id)

    [receipt] = [e.receipt for e in of(events, ev.ToolReceiptRecorded)]
    assert receipt.status == "succeeded" and "completed" in str(receipt.model_view["text"])
    assert of(events, ev.RunCompleted)


def _authorised(harness: Harness, run_id: str) -> bool:
    return bool(of(harness.runtime.ledger.read(run_id), ev.ToolCallAuthorised))


async def _until(check: Any, what: str, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"waited {timeout:.0f}s for {what}")
        await asyncio.sleep(0.1)
