"""Signed webhooks: a delivery starts one run as the requester its pack's mapper names; forged,
stale and unsigned deliveries are refused with problem+json and counted; a redelivery (however
many, however concurrent) starts no second run; a payload the mapper rejects starts none."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agentledger.activities.doors import WebhookDeliveries
from agentledger.api import create_app
from agentledger.api.hooks import WebhookDoor, WebhookSource, webhook_sources
from agentledger.app.errors import ConfigError
from agentledger.domain.webhooks import signature
from tests._temporal import Harness
from tests.api.conftest import stack_issuer

SECRET = b"helpdesk-secret-0123456789"
HOOK = "/hooks/support/helpdesk"


def ticket(n: int = 1, **changes: Any) -> dict[str, Any]:
    return {"ticket_id": f"T-{n}", "customer_id": "usr_73", "status": "open",
            "subject": "Late parcel", "text": "Where is my order ord_4821?", **changes}  # fmt: skip


def signed(
    payload: dict[str, Any] | bytes,
    delivery: str,
    *,
    secret: bytes = SECRET,
    at: float | None = None,
) -> tuple[bytes, dict[str, str]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    stamp = str(int(at if at is not None else time.time()))
    return body, {
        "Content-Type": "application/json",
        "X-AgentLedger-Timestamp": stamp,
        "X-AgentLedger-Delivery": delivery,
        "X-AgentLedger-Signature": signature(secret, stamp, delivery, body),
    }


@pytest.fixture
def door(harness: Harness) -> WebhookDoor:
    source = WebhookSource("support", "helpdesk", SECRET, tenant="acme")
    return WebhookDoor(
        {("support", "helpdesk"): source}, WebhookDeliveries(harness.runtime.ledger.engine)
    )


@pytest.fixture
def hooks_app(harness: Harness, door: WebhookDoor) -> FastAPI:
    return create_app(
        harness.runtime.ledger, harness.client, harness.settings.task_queue,
        [stack_issuer(harness)], signer=harness.issuer, webhooks=door,
    )  # fmt: skip


@pytest.fixture
async def sender(hooks_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=hooks_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api.test") as client:
        yield client


async def post(sender: httpx.AsyncClient, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return await sender.post(HOOK, content=body, headers=headers)


async def runs_on_queue(harness: Harness, expected: int) -> int:
    """The workflows on the test's private queue, once visibility shows ``expected`` (or the
    number it settles on)."""
    query = f'TaskQueue = "{harness.settings.task_queue}" AND WorkflowType = "AgentRun"'
    count = 0
    for _ in range(200):
        count = (await harness.client.count_workflows(query)).count
        if count >= expected:
            break
        await asyncio.sleep(0.05)
    return count


async def test_a_signed_delivery_starts_a_run_for_the_mapped_requester(
    harness: Harness, sender: httpx.AsyncClient, door: WebhookDoor
) -> None:
    answer = await post(sender, *signed(ticket(), f"d-{uuid.uuid4().hex}"))
    assert answer.status_code == 202 and answer.json()["duplicate"] is False
    run_id = answer.json()["run_id"]
    state = await harness.until_approval_or_end(run_id)
    assert state.work_order is not None and state.work_order.principal.user_id == "usr_73"
    assert state.work_order.request_text == "Late parcel: Where is my order ord_4821?"
    assert door.metrics.value("support", "helpdesk", "started") == 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_forged_stale_and_unsigned_deliveries_are_refused_and_counted(
    harness: Harness, sender: httpx.AsyncClient, door: WebhookDoor
) -> None:
    body, headers = signed(ticket(), "d-forged", secret=b"not-the-helpdesk-secret")
    forged = await post(sender, body, headers)
    body, headers = signed(ticket(), "d-tampered")
    tampered = await post(sender, body.replace(b"ord_4821", b"ord_9999"), headers)
    stale = await post(sender, *signed(ticket(), "d-stale", at=time.time() - 3600))
    body, headers = signed(ticket(), "d-renamed")
    renamed = await post(sender, body, {**headers, "X-AgentLedger-Delivery": "d-other"})
    unsigned = await sender.post(HOOK, json=ticket())
    expected = [(forged, "invalid-signature"), (tampered, "invalid-signature"),
                (stale, "stale-delivery"), (renamed, "invalid-signature"),
                (unsigned, "missing-signature")]  # fmt: skip
    for answer, slug in expected:
        assert answer.status_code == 401
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["type"].endswith(slug)
    assert door.metrics.value("support", "helpdesk", "invalid-signature") == 3
    assert door.metrics.value("support", "helpdesk", "stale-delivery") == 1
    assert door.metrics.value("support", "helpdesk", "missing-signature") == 1
    assert await runs_on_queue(harness, 0) == 0
    metrics = await sender.get("/metrics/")
    assert 'outcome="stale-delivery",pack="support",source="helpdesk"} 1.0' in metrics.text


async def test_a_hundred_redeliveries_of_twenty_deliveries_start_exactly_twenty_runs(
    harness: Harness, sender: httpx.AsyncClient, door: WebhookDoor
) -> None:
    deliveries = [signed(ticket(n), f"d-{n}-{uuid.uuid4().hex[:6]}") for n in range(20)]
    first = await asyncio.gather(*(post(sender, *d) for d in deliveries))
    again = [deliveries[i % 20] for i in range(100)]
    answers = [*first]
    for start in range(0, 100, 25):  # redeliveries racing one another, 25 at a time
        answers += await asyncio.gather(*(post(sender, *d) for d in again[start : start + 25]))
    assert all(a.status_code in (200, 202) for a in answers)
    run_ids = {a.json()["run_id"] for a in answers}
    assert len(run_ids) == 20
    assert [a.json()["duplicate"] for a in answers].count(False) == 20
    assert door.metrics.value("support", "helpdesk", "started") == 20
    assert door.metrics.value("support", "helpdesk", "duplicate") == 100
    assert door.deliveries.count("support", "helpdesk") == 20
    assert await runs_on_queue(harness, 20) == 20


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("payload", "status", "slug", "said"),
    [
        (ticket(status="solved"), 422, "payload-rejected", "only open tickets"),
        ({"ticket_id": "T-1", "customer_id": "usr_73", "status": "open"}, 422,
         "payload-rejected", "text: Field required"),
        (b"{not json", 400, "malformed-json", "not valid JSON"),
        (ticket(customer_id="ops_globex"), 422, "requester-refused", "no one in tenant acme"),
        (ticket(customer_id="nobody_here"), 422, "requester-refused", "no one in tenant acme"),
    ],
)  # fmt: skip
async def test_a_payload_the_mapper_rejects_starts_no_run(
    harness: Harness,
    sender: httpx.AsyncClient,
    door: WebhookDoor,
    payload: dict[str, Any] | bytes,
    status: int,
    slug: str,
    said: str,
) -> None:
    answer = await post(sender, *signed(payload, f"d-{uuid.uuid4().hex}"))
    assert answer.status_code == status
    assert answer.json()["type"].endswith(slug) and said in answer.json()["detail"]
    assert door.metrics.value("support", "helpdesk", slug) == 1
    assert door.deliveries.count("support", "helpdesk") == 0
    assert await runs_on_queue(harness, 0) == 0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_an_unconfigured_source_is_unknown_and_counted_without_its_name(
    sender: httpx.AsyncClient, door: WebhookDoor
) -> None:
    answer = await sender.post("/hooks/support/anything", content=b"{}")
    assert answer.status_code == 404 and answer.json()["type"].endswith("unknown-source")
    assert door.metrics.value("-", "-", "unknown-source") == 1


def _config(**entry: Any) -> str:
    return json.dumps({"support/helpdesk": {"secret_env": "HELPDESK_SECRET", **entry}})


def test_a_source_reads_its_secret_from_the_named_variable_and_its_window() -> None:
    env = {"HELPDESK_SECRET": SECRET.decode()}
    (source,) = webhook_sources(_config(tenant="acme", window_seconds=60), env).values()
    assert source.window == timedelta(seconds=60) and source.secret == SECRET


@pytest.mark.parametrize(
    ("config", "env", "said"),
    [
        (_config(tenant="acme"), {}, "holds no secret"),
        (_config(tenant="acme"), {"HELPDESK_SECRET": "short"}, "holds no secret"),
        (_config(), {"HELPDESK_SECRET": SECRET.decode()}, "tenant"),
        ('{"helpdesk": {}}', {}, "not pack/source"),
        ("[1, 2", {}, "AGENTLEDGER_WEBHOOK_SOURCES"),
    ],
)
def test_a_source_that_cannot_be_used_stops_serve_by_name(
    config: str, env: dict[str, str], said: str
) -> None:
    with pytest.raises(ConfigError, match=said) as refused:
        webhook_sources(config, env)
    assert "\n" not in str(refused.value)
