"""Approvals announced where the approver is: a Slack-compatible webhook receiver and an SMTP
server (aiosmtpd), both started here, get one message per approval request, with a link to the
approvals page and none of the call's arguments; a webhook that answers 500 or hangs and a mail
server that refuses are retried by Temporal as their errors allow and recorded as
``approval_notification_failed``; the approval waits and is decided as it would be without."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope

from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.errors import ConfigError
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect
from agentledger.domain import events as ev
from bench._stack import free_port
from bench.harness import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


@dataclass
class Hooks:
    """A webhook receiver: ``/ok`` takes a message, ``/fail`` answers 500, ``/hang`` answers
    after the caller gave up."""

    url: str
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@pytest.fixture
def hooks() -> Iterator[Hooks]:
    received: list[tuple[str, dict[str, Any]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((self.path, body))
            if self.path == "/hang":
                time.sleep(2)
            self.send_response(500 if self.path == "/fail" else 200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Hooks(f"http://127.0.0.1:{server.server_address[1]}", received)
    server.shutdown()


class Mailbox:
    def __init__(self, refuse: bool = False) -> None:
        self.refuse, self.messages = refuse, []  # type: list[Envelope]

    async def handle_RCPT(
        self, server: object, session: object, envelope: Envelope, address: str, options: object
    ) -> str:
        if self.refuse:
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: object, session: object, envelope: Envelope) -> str:
        self.messages.append(envelope)
        return "250 OK"


@pytest.fixture
def mail() -> Iterator[tuple[Mailbox, int, Mailbox, int]]:
    good, strict = Mailbox(), Mailbox(refuse=True)
    ports = free_port(), free_port()
    servers = [
        Controller(h, hostname="127.0.0.1", port=p)
        for h, p in zip((good, strict), ports, strict=True)
    ]
    for server in servers:
        server.start()
    yield good, ports[0], strict, ports[1]
    for server in servers:
        server.stop()


@pytest.fixture
async def noticed(
    temporal_server: DevServer,
    tmp_path: Path,
    hooks: Hooks,
    mail: tuple[Mailbox, int, Mailbox, int],
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Harness]:
    """A worker whose notification file names five channels for every tenant."""
    for name in ("ok", "fail", "hang"):
        monkeypatch.setenv(f"TEST_HOOK_{name.upper()}", f"{hooks.url}/{name}")
    _, good_port, _, strict_port = mail
    address = {"ops_lead_1": "priya@example.test", "usr_73": "customer@example.test"}
    channels = {
        "ops-chat": {"kind": "webhook", "url_env": "TEST_HOOK_OK"},
        "broken-chat": {"kind": "webhook", "url_env": "TEST_HOOK_FAIL"},
        "slow-chat": {"kind": "webhook", "url_env": "TEST_HOOK_HANG", "timeout_seconds": 0.3},
        "ops-mail": {"kind": "email", "host": "127.0.0.1", "port": good_port,
                     "sender": "agentledger@example.test", "recipients": address},
        "strict-mail": {"kind": "email", "host": "127.0.0.1", "port": strict_port,
                        "sender": "agentledger@example.test", "recipients": address},
    }  # fmt: skip
    notify = tmp_path / "notify.json"
    config = {"base_url": "https://inbox.example.test", "channels": channels}
    notify.write_text(json.dumps({**config, "tenants": {"*": list(channels)}}))
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        temporal_address=temporal_server.address,
        task_queue=f"test-{uuid.uuid4().hex[:10]}",
        notify_file=notify,
    )
    runtime = Runtime.open(settings)
    runtime.seed()
    stack = Harness(runtime, await connect(settings), settings)
    async with runtime.worker(stack.client):
        yield stack
    runtime.ledger.engine.dispose()


async def test_each_channel_gets_one_message_per_approval_and_failures_are_recorded(
    noticed: Harness, hooks: Hooks, mail: tuple[Mailbox, int, Mailbox, int]
) -> None:
    run_id = await noticed.start(REQUEST)
    (approval,) = await noticed.in_inbox(run_id)
    state = await noticed.until_approval_or_end(run_id)
    events = noticed.runtime.ledger.read(run_id)
    while not any(isinstance(e, ev.ApprovalNotificationFailed) and e.channel == "slow-chat"
                  for e in events):  # fmt: skip
        await asyncio.sleep(0.1)
        events = noticed.runtime.ledger.read(run_id)
    notified = {e.channel: e for e in events if isinstance(e, ev.ApprovalNotified)}
    failed = {e.channel: e for e in events if isinstance(e, ev.ApprovalNotificationFailed)}
    assert set(notified) == {"ops-chat", "ops-mail"}
    assert notified["ops-mail"].recipients == 1  # the eligible approver, not the customer
    assert {c: f.reason_code for c, f in failed.items()} == {
        "broken-chat": "webhook_failed",
        "slow-chat": "webhook_unreachable",
        "strict-mail": "smtp_refused",
    }
    paths = [path for path, _ in hooks.received]
    assert paths.count("/ok") == 1  # one message per approval request
    assert paths.count("/fail") == 3 and paths.count("/hang") == 3  # Temporal's retries
    (_, body), *_ = [r for r in hooks.received if r[0] == "/ok"]
    text = body["text"]
    link = f"https://inbox.example.test/ui/approvals#{run_id}-{approval.approval_id}"
    assert link in text and "create_refund" in text and "approves nothing" in text
    assert "42.5" not in text and "ord_4821" not in text  # no arguments unless configured
    good, _, strict, _ = mail
    (message,) = good.messages
    assert message.rcpt_tos == ["priya@example.test"] and strict.messages == []
    assert link in (message.content or b"").decode()

    assert approval.approval_id in state.pending_approvals  # still waiting, as without notices
    await noticed.decide(run_id, approval.approval_id, "ops_lead_1")
    done = await noticed.finish(run_id)
    receipts = [e for e in done if isinstance(e, ev.ToolReceiptRecorded)
                and e.receipt.tool == "create_refund"]  # fmt: skip
    assert len(receipts) == 1 and receipts[0].receipt.status == "succeeded"
    manifest = noticed.runtime.ledger.get_manifest(done[-1].manifest_hash)
    assert manifest is not None and len(manifest.notify_channels) == 5
    assert "TEST_HOOK" not in manifest.model_dump_json()  # names only: no address, no secret


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "notification file"),
        ('{"base_url": "x", "channels": {}, "tenants": {"*": ["ops-chat"]}}', "no channel"),
        ('{"base_url": "x", "channels": {"c": {"kind": "pager"}}, "tenants": {}}', "notification"),
    ],
)
def test_a_bad_notification_file_stops_the_worker_with_the_reason(
    tmp_path: Path, content: str, reason: str
) -> None:
    notify = tmp_path / "notify.json"
    notify.write_text(content)
    runtime = Runtime.open(
        Settings(
            data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'l.db'}", notify_file=notify
        )
    )
    with pytest.raises(ConfigError, match=reason):
        runtime.notices()
    runtime.ledger.engine.dispose()
