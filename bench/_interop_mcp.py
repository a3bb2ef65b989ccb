"""The MCP half of ``bench.interop``: server-everything (npm, stdio) discovered, pinned and called
inside real runs on an embedded stack, through the authority gate, approvals and the ledger."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack, register_pack
from agentledger.domain import events as ev
from agentledger.domain.principal import Principal
from bench import _mcp_pack as mcp
from bench._stack import Stack, embedded_stack

Report = Callable[..., None]


async def _run(stack: Stack, request: str, principal: Principal) -> list[ev.RunEvent]:
    """A scripted run; every approval it asks for is granted (an elicitation with a name)."""
    order = get_pack(mcp.NAME).make_work_order(request, principal)
    handle = await client_ops.start_run(
        stack.client, stack.settings.task_queue, order, issuer=stack.issuer
    )
    approver = stack.runtime.ledger.get_principal(mcp.APPROVER.user_id)
    assert approver is not None
    while True:
        state = await client_ops.wait_for(stack.client, handle.id, pending_approval=True)
        if not state.pending_approvals:
            break
        for approval_id, pending in state.pending_approvals.items():
            content = {"name": "Ada Lovelace"} if pending.elicitation is not None else None
            await client_ops.decide(
                stack.client,
                handle.id,
                approval_id,
                approver.user_id,
                issuer=stack.issuer,
                approve=True,
                content=content,
            )
    await handle.result()
    return stack.runtime.ledger.read(handle.id)


def _receipts(events: list[ev.RunEvent]) -> list[Any]:
    return [e.receipt for e in events if isinstance(e, ev.ToolReceiptRecorded)]


async def mcp_cases(report: Report) -> dict[str, int]:
    register_pack(mcp.NAME, "bench._mcp_pack:PACK")
    figures = {"mcp_tools_discovered": 0, "mcp_calls_ok": 0, "mcp_denials_recorded": 0}
    async with embedded_stack() as stack, stack.runtime.worker(stack.client):
        started = time.perf_counter()
        reads = mcp.script(
            mcp.call("echo", message="interop"),
            mcp.call("get-sum", a=2, b=3),
            mcp.call("trigger-long-running-operation", duration=1, steps=2),
        )
        events = await _run(stack, reads, mcp.READER)
        manifest = stack.runtime.ledger.get_manifest(events[0].manifest_hash)
        assert manifest is not None
        [pin] = manifest.mcp_servers
        figures["mcp_tools_discovered"] = len(pin.snapshot.tools)
        ok = [r for r in _receipts(events) if r.status == "succeeded"]
        figures["mcp_calls_ok"] += len(ok)
        report(
            "mcp:reads_through_the_gate",
            len(ok) == 3 and events[-1].kind == "run_completed",
            tools_listed=len(pin.snapshot.tools),
            pinned=pin.snapshot.tools_digest[:19],
            seconds=round(time.perf_counter() - started, 1),
        )

        events = await _run(stack, mcp.script(mcp.call("toggle-simulated-logging")), mcp.READER)
        denied = [e for e in events if isinstance(e, ev.ToolCallDenied)]
        figures["mcp_denials_recorded"] += len(denied)
        report(
            "mcp:write_without_scope_denied",
            [d.reason_code for d in denied] == ["scope_missing"] and not _receipts(events),
        )

        asked = mcp.script(mcp.call("trigger-elicitation-request"))
        events = await _run(stack, asked, mcp.OPERATOR)
        [receipt] = _receipts(events)
        figures["mcp_calls_ok"] += receipt.status == "succeeded"
        approvals = [e for e in events if isinstance(e, ev.ApprovalGranted)]
        report(
            "mcp:elicitation_answered_by_a_human",
            "Ada Lovelace" in str(receipt.model_view.get("text")) and len(approvals) == 2,
            approvals=len(approvals),
        )
    return figures
