"""Signed webhooks into runs: the sources ``agentledger serve`` accepts and what it does with a
delivery (``routes_hooks`` answers; ``domain.webhooks`` judges signatures).

A source is configured, never declared by a sender: ``AGENTLEDGER_WEBHOOK_SOURCES`` (inline
JSON or a ``.json`` file's path) maps ``"<pack>/<source>"`` to ``{"secret_env": VARIABLE,
"tenant": TENANT, "window_seconds": 300}``. The secret is read from the named variable when
the service starts (a missing one stops it, by name); the tenant bounds whom the pack's mapper
may name as requester.

A delivery is believed (signature and time), mapped by the pack, its requester found in the
directory within the source's tenant, then claimed by its delivery id (``WebhookDeliveries``)
and started under a run id derived from it with Temporal's ``REJECT_DUPLICATE``: however often
it is redelivered, and however many redeliveries race, one run starts. The start is signed
with the service's key as the mapped requester's (the run refuses an unsigned one): the
signature and the directory vouched for them here.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from agentledger.activities.doors import WebhookDeliveries
from agentledger.activities.ledger import Ledger
from agentledger.activities.ports import Pack
from agentledger.api.deps import ApiContext
from agentledger.api.problems import ApiProblem
from agentledger.app import runs as client_ops
from agentledger.app.errors import ConfigError, Refused, ServerUnavailable
from agentledger.app.observability.webhooks import WebhookMetrics
from agentledger.app.registry import PackLoadError, UnknownPack, get_pack
from agentledger.domain.principal import tenant_covers
from agentledger.domain.webhooks import (
    DEFAULT_WINDOW,
    MAX_DELIVERY_ID,
    MappedOrder,
    PayloadRejected,
    delivery_run_id,
    signature_problem,
)

SOURCES_VARIABLE = "AGENTLEDGER_WEBHOOK_SOURCES"


@dataclass(frozen=True)
class WebhookSource:
    pack: str
    source: str
    secret: bytes = field(repr=False)
    tenant: str
    window: timedelta = DEFAULT_WINDOW


@dataclass
class WebhookDoor:
    """The configured sources, the delivery ledger and the counters, for one app."""

    sources: Mapping[tuple[str, str], WebhookSource]
    deliveries: WebhookDeliveries
    metrics: WebhookMetrics = field(default_factory=WebhookMetrics)


@dataclass(frozen=True)
class Delivered:
    run_id: str
    duplicate: bool


def webhook_sources(
    value: str | None, env: Mapping[str, str] = os.environ
) -> dict[tuple[str, str], WebhookSource]:
    """``AGENTLEDGER_WEBHOOK_SOURCES`` read, each secret from its variable; ``ConfigError``."""
    if not value or not value.strip():
        return {}
    try:
        raw = json.loads(value if value.lstrip().startswith("{") else Path(value).read_text())
        return {key: _source(name, entry, env) for name, entry in raw.items()
                for key in [tuple(name.split("/", 1))]}  # fmt: skip
    except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ConfigError(
            f'{SOURCES_VARIABLE}: {exc}. Expected {{"pack/source": {{"secret_env": VAR, '
            '"tenant": TENANT}}'
        ) from None


def _source(name: str, entry: Mapping[str, Any], env: Mapping[str, str]) -> WebhookSource:
    pack, _, source = name.partition("/")
    if not pack or not source:
        raise ValueError(f"{name!r} is not pack/source")
    secret = env.get(str(entry["secret_env"]), "")
    if len(secret) < 16:
        raise ValueError(f"{name}: variable {entry['secret_env']} holds no secret of 16+ chars")
    window = timedelta(seconds=int(entry.get("window_seconds", DEFAULT_WINDOW.total_seconds())))
    return WebhookSource(pack, source, secret.encode(), str(entry["tenant"]), window)


def webhook_door(ledger: Ledger) -> WebhookDoor | None:
    """The sources ``AGENTLEDGER_WEBHOOK_SOURCES`` configures (``None``: none, ``/hooks``
    answers ``unknown-source``)."""
    sources = webhook_sources(os.environ.get(SOURCES_VARIABLE))
    return WebhookDoor(sources, WebhookDeliveries(ledger.engine)) if sources else None


def believed(
    door: WebhookDoor, pack: str, source: str, headers: Mapping[str, str], body: bytes
) -> WebhookSource:
    """The configured source, if the delivery's signature is its and in time."""
    found = door.sources.get((pack, source))
    if found is None:
        raise ApiProblem(404, "unknown-source", f"no webhook source {pack}/{source} is configured")
    delivery_id = headers.get("x-agentledger-delivery")
    problem = signature_problem(
        found.secret,
        timestamp=headers.get("x-agentledger-timestamp"),
        delivery_id=delivery_id,
        sent=headers.get("x-agentledger-signature"),
        body=body,
        now=datetime.now(UTC),
        window=found.window,
    )
    if problem is not None:
        raise ApiProblem(401, problem, _SAID[problem])
    if delivery_id is None or not 0 < len(delivery_id) <= MAX_DELIVERY_ID:
        raise ApiProblem(400, "missing-delivery-id", "the delivery id is 1 to 200 characters")
    return found


_SAID = {
    "missing-signature": "a delivery needs X-AgentLedger-Timestamp, -Delivery and -Signature",
    "invalid-signature": "the signature is not this source's over this timestamp, id and body",
    "stale-delivery": "the delivery's timestamp is outside this source's window",
}


def mapped(source: WebhookSource, body: bytes) -> tuple[Pack, MappedOrder]:
    """The pack's mapping of the payload into a request and requester."""
    try:
        pack = get_pack(source.pack)
    except (UnknownPack, PackLoadError) as exc:
        raise ApiProblem(503, "pack-unavailable", str(exc)) from None
    mapping = pack.webhooks.get(source.source)
    if mapping is None:
        raise ApiProblem(404, "unknown-source", f"pack {pack.name} maps no {source.source}")
    try:
        payload = json.loads(body)
    except ValueError:
        raise ApiProblem(400, "malformed-json", "the body is not valid JSON") from None
    try:
        return pack, mapping.order_for(payload)
    except PayloadRejected as exc:
        raise ApiProblem(422, "payload-rejected", exc.reason) from None


async def deliver(
    ctx: ApiContext, door: WebhookDoor, source: WebhookSource, delivery_id: str, body: bytes
) -> Delivered:
    """Start the delivery's one run (or find it started), as its mapped requester."""
    pack, order = mapped(source, body)
    principal = await asyncio.to_thread(ctx.ledger.get_principal, order.requester)
    if principal is None or not tenant_covers(source.tenant, principal.tenant_id):
        raise ApiProblem(
            422, "requester-refused", f"{order.requester} is no one in tenant {source.tenant}"
        )
    run_id = delivery_run_id(source.pack, source.source, delivery_id)
    claim = await asyncio.to_thread(
        door.deliveries.claim, source.pack, source.source, delivery_id, run_id, datetime.now(UTC)
    )
    if claim.started:
        return Delivered(claim.run_id, duplicate=True)
    work_order = pack.make_work_order(order.request, principal)
    try:
        await client_ops.start_run(
            ctx.client, ctx.task_queue, work_order, claim.run_id, issuer=ctx.signer,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )  # fmt: skip
        duplicate = False
    except WorkflowAlreadyStartedError:  # a racing redelivery started it
        duplicate = True
    except Refused as exc:
        raise ApiProblem(422, "work-order-refused", str(exc)) from None
    except (ServerUnavailable, RPCError) as exc:  # not marked: the sender's retry starts it
        raise ApiProblem(503, "unavailable", f"Temporal could not start the run: {exc}") from None
    await asyncio.to_thread(door.deliveries.mark_started, source.pack, source.source, delivery_id)
    return Delivered(claim.run_id, duplicate=duplicate)
