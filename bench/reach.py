"""Reach: runs started through each door — MCP, A2A, a schedule, signed webhooks — against the
HTTP API's, on one embedded stack (dev server, in-process worker, SQLite ledger).

Each round starts one support refund run through the API (``POST /api/runs``), one through MCP
(``support_start_run`` over streamable HTTP), one through A2A (``SendMessage`` with
``return_immediately``, through ``a2a-sdk``'s client) and one through a signed webhook
delivery, in turn, and times each from the request to the run parked on its approval (the same
``client_ops.wait_for`` for all). Then the 20 webhook deliveries are each redelivered 5 times
(100 redeliveries, 25 at a time), a schedule fires every 2 s until it has started 3 runs, and
every run is approved and waited to its end.

    python -m bench.reach [--rounds 20]

Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentledger.activities.doors import WebhookDeliveries
from agentledger.api import create_app
from agentledger.api.hooks import WebhookDoor, WebhookSource
from agentledger.app import runs as client_ops
from agentledger.app import schedules
from agentledger.app.registry import get_pack
from agentledger.domain.webhooks import signature
from bench._stack import Stack, embedded_stack, free_port
from bench.api import served, trusted

REFUND = "Can I get a refund for order ord_4821? It arrived late."
SECRET = b"bench-reach-secret-0123456789"


def _delivery(n: int) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"ticket_id": f"T-{n}", "customer_id": "usr_73", "status": "open",
                       "text": REFUND}).encode()  # fmt: skip
    stamp, delivery = str(int(time.time())), f"bench-{n}-{uuid.uuid4().hex[:8]}"
    return body, {"Content-Type": "application/json", "X-AgentLedger-Timestamp": stamp,
                  "X-AgentLedger-Delivery": delivery,
                  "X-AgentLedger-Signature": signature(SECRET, stamp, delivery, body)}  # fmt: skip


async def _parked(stack: Stack, run_id: str, since: float) -> float:
    await client_ops.wait_for(stack.client, run_id, pending_approval=True)
    return time.perf_counter() - since


async def _a2a_started(agent: Any) -> str:
    request = pb.SendMessageRequest(
        message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                           parts=[pb.Part(text=REFUND)]),
        configuration=pb.SendMessageConfiguration(return_immediately=True),
    )  # fmt: skip
    async for response in agent.send_message(request):
        return str(response.task.id)
    raise RuntimeError("A2A answered nothing")


async def _a2a_agent(base: str, token: str, exits: AsyncExitStack) -> Any:
    http = await exits.enter_async_context(
        httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    )
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
    return await factory.create_from_url(
        f"{base}/a2a/support", relative_card_path="/.well-known/agent-card.json"
    )


async def _rounds(
    stack: Stack, http: httpx.AsyncClient, mcp: ClientSession, agent: Any, n: int
) -> tuple[dict[str, list[float]], dict[str, list[str]], list[tuple[bytes, dict[str, str]]]]:
    times: dict[str, list[float]] = {"api": [], "mcp": [], "a2a": [], "webhook": []}
    runs: dict[str, list[str]] = {"api": [], "mcp": [], "a2a": [], "webhook": []}
    deliveries = [_delivery(i) for i in range(n)]
    for i in range(n):
        since = time.perf_counter()
        answer = await http.post("/api/runs", json={"pack": "support", "request": REFUND})
        runs["api"].append(answer.json()["run_id"])
        times["api"].append(await _parked(stack, runs["api"][-1], since))
        since = time.perf_counter()
        result = await mcp.call_tool("support_start_run", {"request": REFUND})
        runs["mcp"].append((result.structured_content or {})["run_id"])
        times["mcp"].append(await _parked(stack, runs["mcp"][-1], since))
        since = time.perf_counter()
        runs["a2a"].append(await _a2a_started(agent))
        times["a2a"].append(await _parked(stack, runs["a2a"][-1], since))
        since = time.perf_counter()
        answer = await http.post("/hooks/support/helpdesk", content=deliveries[i][0],
                                 headers=deliveries[i][1])  # fmt: skip
        runs["webhook"].append(answer.json()["run_id"])
        times["webhook"].append(await _parked(stack, runs["webhook"][-1], since))
    return times, runs, deliveries


async def _redeliver(http: httpx.AsyncClient, deliveries: list[Any]) -> set[str]:
    again = [deliveries[i % len(deliveries)] for i in range(5 * len(deliveries))]
    seen: set[str] = set()
    for start in range(0, len(again), 25):
        batch = again[start : start + 25]
        answers = await asyncio.gather(
            *(http.post("/hooks/support/helpdesk", content=b, headers=h) for b, h in batch)
        )
        seen |= {a.json()["run_id"] for a in answers}
    return seen


async def _scheduled(stack: Stack, want: int) -> list[str]:
    name = f"reach-{uuid.uuid4().hex[:6]}"
    order = get_pack("support").make_work_order(REFUND, stack.principal("usr_73"))
    definition = schedules.ScheduleDefinition(
        name=name, pack="support", request=REFUND, principal="usr_73", cron=None, every="2s",
        overlap="allow", catchup=None, created_by="bench", created_at=datetime.now(UTC).isoformat(),
    )  # fmt: skip
    await schedules.add(
        stack.client, stack.runtime.ledger, stack.settings.task_queue, definition, order
    )
    prefix = f"run-{schedules.schedule_id(name)}-"
    while True:
        found = [
            r.run_id for r in stack.runtime.ledger.list_runs(500) if r.run_id.startswith(prefix)
        ]
        if len(found) >= want:
            break
        await asyncio.sleep(0.1)
    await schedules.change(
        stack.client, stack.runtime.ledger, name, "deleted", "bench", datetime.now(UTC)
    )
    return found


async def _finish(stack: Stack, run_ids: list[str]) -> int:
    """Approve each run's pending approval and wait for it to end; the number completed."""
    completed = 0
    for run_id in run_ids:
        state = await client_ops.wait_for(stack.client, run_id, pending_approval=True)
        for approval_id in state.pending_approvals:
            await client_ops.decide(stack.client, run_id, approval_id, "ops_lead_1",
                                    issuer=stack.issuer, approve=True)  # fmt: skip
        ended = await client_ops.wait_for(stack.client, run_id, pending_approval=False)
        completed += ended.status == "completed"
    return completed


async def measure(rounds: int) -> dict[str, Any]:
    async with (
        embedded_stack() as stack,
        stack.runtime.worker(stack.client),
        AsyncExitStack() as exits,
    ):
        source = WebhookSource("support", "helpdesk", SECRET, tenant="acme")
        port = free_port()  # the A2A cards and MCP metadata name the served address
        door = WebhookDoor(
            {("support", "helpdesk"): source}, WebhookDeliveries(stack.runtime.ledger.engine)
        )
        app = create_app(stack.runtime.ledger, stack.client, stack.settings.task_queue,
                         [trusted(stack.issuer)], signer=stack.issuer, webhooks=door,
                         public_url=f"http://127.0.0.1:{port}")  # fmt: skip
        base, server, task = await served(app, port)
        token = stack.issuer.token("usr_73")
        http = await exits.enter_async_context(
            httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"})
        )
        mcp_http = await exits.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        )
        read, write, *_ = await exits.enter_async_context(
            streamable_http_client(f"{base}/mcp/", http_client=mcp_http)
        )
        mcp = await exits.enter_async_context(ClientSession(read, write))
        await mcp.initialize()
        agent = await _a2a_agent(base, token, exits)
        try:
            times, runs, deliveries = await _rounds(stack, http, mcp, agent, rounds)
            redelivered = await _redeliver(http, deliveries)
            runs["schedule"] = await _scheduled(stack, 3)
            completed = {door_: await _finish(stack, ids) for door_, ids in runs.items()}
        finally:
            server.should_exit = True
            await task
    p50 = {k: statistics.median(v) for k, v in times.items()}
    return {
        **{f"{k}_runs_started": len(v) for k, v in runs.items()},
        **{f"{k}_runs_completed": completed[k] for k in runs},
        "webhook_deliveries_distinct": len(deliveries),
        "webhook_redeliveries": 5 * len(deliveries),
        # every run the first deliveries and all the redeliveries started, distinct
        "webhook_runs_started": len(redelivered | set(runs["webhook"])),
        **{f"{k}_start_to_park_p50_ms": round(v * 1000, 1) for k, v in p50.items()},
        **{f"{k}_vs_api": round(p50[k] / p50["api"], 3) for k in ("mcp", "a2a", "webhook")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    figures = asyncio.run(measure(parser.parse_args().rounds))
    for key, value in figures.items():
        print(f"{key:45} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
