"""A whole run against an MCP server that demands a bearer token, on the real Temporal server: the
token goes out on every request and is found nowhere afterwards (ledger tables, packets among
them; the workflow's Temporal history; the logs)."""

from __future__ import annotations

import logging

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack, register_pack, unregister_pack
from agentledger.domain import events as ev
from agentledger.domain.mcp import BearerToken, StreamableHttpTransport
from agentledger.domain.principal import Principal
from bench import _mcp_pack as mcp
from tests._temporal import Harness
from tests.mcp.test_bearer_auth import TOKEN_ENV, token, url  # noqa: F401 - the token peer fixture
from tests.providers.test_secrets import ledger_text

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

register_pack(mcp.NAME, "bench._mcp_pack:PACK")  # its scripted model, on the harness's worker
READER = Principal(
    user_id="token_reader", tenant_id="t_mcp", scopes=frozenset({"mcp.tokened:read"})
)


async def test_a_bearer_token_run_leaves_the_token_nowhere(
    harness: Harness,
    url: str,  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = token(url)
    monkeypatch.setenv(TOKEN_ENV, secret)
    server = mcp.connection().model_copy(
        update={
            "name": "tokened",
            "transport": StreamableHttpTransport(url=url, auth=BearerToken(token_env=TOKEN_ENV)),
            "server_name": "agentledger-token-peer",
            "server_version": "0.1.0",
            "allowed_tools": ("whoami",),
        }
    )
    globals()["TOKENED_PACK"] = mcp.build_pack("mcp_tokened", server, principals=(READER,))
    register_pack("mcp_tokened", "tests.mcp.test_bearer_run:TOKENED_PACK")
    try:
        harness.runtime.ledger.put_principal(READER)
        order = get_pack("mcp_tokened").make_work_order(
            mcp.script({"tool": "tokened__whoami", "arguments": {}}), READER
        )
        handle = await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )
        events = await harness.finish(handle.id)
        history = (await handle.fetch_history()).to_json()
    finally:
        unregister_pack("mcp_tokened")

    [receipt] = [e.receipt for e in events if isinstance(e, ev.ToolReceiptRecorded)]
    assert receipt.status == "succeeded"
    assert receipt.model_view["text"] == "subject=agentledger-worker"  # the server saw the token
    assert any(isinstance(e, ev.RunCompleted) for e in events)
    stored = ledger_text(harness.runtime.ledger.engine)
    packets = [e.packet_hash for e in events if isinstance(e, ev.ContextPacketBuilt)]
    assert packets and all(harness.runtime.ledger.get_packet(h) for h in packets)  # scanned
    captured = capfd.readouterr()
    logs = "\n".join([caplog.text, captured.out, captured.err])
    signature = secret.rpartition(".")[2]
    for where, text in {"ledger": stored, "history": history, "logs": logs}.items():
        assert secret not in text and signature not in text, f"the token is in the {where}"
