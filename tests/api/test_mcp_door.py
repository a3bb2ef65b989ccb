"""The MCP door over real HTTP (uvicorn on a port, the ``mcp`` client library): a customer's
client lists the support pack's tools, starts a run and sees it park on an approval; the
approver decides through the API; the client reads the answer. No token, another tenant's run
and a customer asking for the approvals inbox are each refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentledger.api import create_app
from bench._stack import free_port
from tests._temporal import Harness
from tests.api.conftest import Signer, issuers, stack_issuer

REFUND = "Can I get a refund for order ord_4821? It arrived late."


@pytest.fixture
async def base_url(
    harness: Harness, local_signer: Signer, external_signer: Signer
) -> AsyncIterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app: FastAPI = create_app(
        harness.runtime.ledger, harness.client, harness.settings.task_queue,
        [*issuers(local_signer, external_signer), stack_issuer(harness)],
        signer=harness.issuer, public_url=base,
    )  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    yield base
    server.should_exit = True
    await serving


async def _session(stack: AsyncExitStack, url: str, token: str) -> ClientSession:
    client = await stack.enter_async_context(
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    )
    read, write, *_ = await stack.enter_async_context(
        streamable_http_client(f"{url}/mcp/", http_client=client)
    )
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def _call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, Any]:
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        return False, " ".join(getattr(c, "text", "") for c in result.content)
    return True, result.structured_content


async def _until(session: ClientSession, run_id: str, done: Any) -> dict[str, Any]:
    for _ in range(600):
        ok, status = await _call(session, "run_status", run_id=run_id)
        if ok and done(status):
            return dict(status)
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never got there: {status}")


async def test_an_mcp_client_drives_a_support_run_to_its_approval_and_answer(
    base_url: str, local_signer: Signer
) -> None:
    async with AsyncExitStack() as stack:
        customer = await _session(stack, base_url, local_signer.token("usr_73"))
        tools = {t.name: t for t in (await customer.list_tools()).tools}
        assert {"support_start_run", "run_status", "reply_to_run", "pending_approvals"} <= set(
            tools
        )
        assert tools["support_start_run"].input_schema["required"] == ["request"]
        assert not any("approve" in name for name in tools)

        ok, started = await _call(customer, "support_start_run", request=REFUND)
        assert ok, started
        run_id = started["run_id"]
        parked = await _until(customer, run_id, lambda s: s["state"]["pending_approvals"])
        assert parked["status"] == "awaiting_approval"
        ok, said = await _call(customer, "pending_approvals")
        assert not ok and "forbidden" in said

        approver = await _session(stack, base_url, local_signer.token("ops_lead_1"))
        ok, inbox = await _call(approver, "pending_approvals")
        (approval,) = [a for a in inbox["result"] if a["run_id"] == run_id]
        async with httpx.AsyncClient(base_url=base_url) as api:
            decided = await api.post(
                f"/api/runs/{run_id}/approvals/{approval['approval_id']}/decision",
                json={"approve": True},
                headers={"Authorization": f"Bearer {local_signer.token('ops_lead_1')}"},
            )
        assert decided.status_code == 200, decided.text
        ended = await _until(customer, run_id, lambda s: s["status"] in ("completed", "failed"))
        assert ended["status"] == "completed" and ended["answer"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # about tokens, not storage
async def test_an_mcp_call_without_a_token_or_for_another_tenants_run_is_refused(
    base_url: str, local_signer: Signer, harness: Harness
) -> None:
    async with httpx.AsyncClient(base_url=base_url) as raw:
        bare = await raw.post("/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        metadata = await raw.get("/.well-known/oauth-protected-resource/mcp")
    assert bare.status_code == 401
    assert "resource_metadata=" in bare.headers["www-authenticate"]
    assert metadata.status_code == 200 and metadata.json()["resource"] == f"{base_url}/mcp"

    run_id = await harness.start(REFUND)  # usr_73's run, in tenant acme
    async with AsyncExitStack() as stack:
        globex = await _session(stack, base_url, local_signer.token("ops_globex"))
        ok, said = await _call(globex, "run_status", run_id=run_id)
        assert not ok and "not-found" in said
        ok, said = await _call(globex, "reply_to_run", run_id=run_id, text="hello")
        assert not ok and "not-found" in said
