"""Prometheus metrics derived from the ledger's appended events, never re-emitted on replay.

``LedgerMetrics.over(ledger)`` builds a registry of its own (tests make several), registers the
projection as the ledger's append observer and the pending-approvals collector, and
``serve_metrics`` puts it on ``/metrics`` with the Temporal SDK's runtime metrics appended.
Each worker exports what *it* appended: sums across a fleet are the fleet's totals. The
pending-approval gauges are read from the ledger at scrape time and are fleet-wide already.

``asgi_app`` is the same scrape for an ASGI server (``agentledger serve`` will mount it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from temporalio.runtime import PrometheusConfig, TelemetryConfig
from temporalio.runtime import Runtime as TemporalRuntime

from agentledger.activities.ledger import Ledger
from agentledger.app.observability._metrics_families import Families
from agentledger.app.observability._metrics_http import (
    Exposition,
    loopback_address,
    serve_http,
    wsgi_app,
)
from agentledger.app.observability._metrics_pending import PendingApprovalsCollector
from agentledger.app.observability._metrics_projection import LedgerProjection

__all__ = [
    "LedgerFacts",
    "LedgerMetrics",
    "asgi_app",
    "serve_metrics",
    "temporal_runtime",
    "wsgi_app",
]


class LedgerFacts:
    """``RunFacts`` from the ledger: for events whose context another process appended."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def pack_of(self, run_id: str) -> str | None:
        row = self._ledger.get_run(run_id)
        return None if row is None else row.pack

    def model_profile_of(self, manifest_hash: str) -> str | None:
        body = self._ledger.get_manifest_body(manifest_hash) or {}
        name = (body.get("model") or {}).get("name")
        return name if isinstance(name, str) else None

    def approval_requested_at(self, run_id: str, approval_id: str) -> datetime | None:
        return self._ledger.approval_requested_at(run_id, approval_id)


@dataclass
class LedgerMetrics:
    registry: CollectorRegistry
    projection: LedgerProjection
    exposition: Exposition

    @classmethod
    def over(cls, ledger: Ledger, *, sdk_address: str | None = None) -> LedgerMetrics:
        """Observe ``ledger``'s appends from now on; ``sdk_address``: the Temporal SDK's
        exporter (``temporal_runtime``) to append to each scrape."""
        registry = CollectorRegistry()
        projection = LedgerProjection(Families(registry), LedgerFacts(ledger))
        registry.register(PendingApprovalsCollector(ledger))
        ledger.observe(projection)
        return cls(registry, projection, Exposition(registry, sdk_address))

    def scrape(self) -> str:
        """The text a ``GET /metrics`` returns."""
        return self.exposition.render().decode()


def temporal_runtime(sdk_address: str | None = None) -> tuple[TemporalRuntime, str]:
    """A Temporal runtime exporting the SDK's metrics on ``sdk_address`` (default: a free
    loopback port), in seconds and with ``_total`` counters like ours. Pass it to
    ``temporal_client.connect``; workers inherit their client's runtime."""
    address = sdk_address or loopback_address()
    config = PrometheusConfig(
        bind_address=address, counters_total_suffix=True, durations_as_seconds=True
    )
    return TemporalRuntime(telemetry=TelemetryConfig(metrics=config)), address


def serve_metrics(metrics: LedgerMetrics, port: int, host: str = "0.0.0.0") -> Any:
    """``/metrics`` on ``host:port`` from a daemon thread; returns the server (``shutdown()``)."""
    return serve_http(metrics.exposition, port, host)


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def asgi_app(metrics: LedgerMetrics) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The scrape as an ASGI app, to mount at ``/metrics`` (e.g. by ``agentledger serve``)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await asyncio.to_thread(metrics.exposition.render)
        headers = [(b"content-type", CONTENT_TYPE_LATEST.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app
