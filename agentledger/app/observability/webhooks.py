"""Webhook deliveries counted by outcome, on a registry of their own that ``agentledger serve``
exposes at ``/metrics``.

``agentledger_webhook_deliveries_total{pack, source, outcome}``: ``started`` (a run was
started), ``duplicate`` (a redelivery: no second run), and each refusal by its problem type
(``invalid-signature``, ``stale-delivery``, ``missing-signature``, ``unknown-source``,
``missing-delivery-id``, ``malformed-json``, ``payload-rejected``, ``requester-refused``,
``work-order-refused``, ``unavailable``).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.deliveries = Counter(
            "agentledger_webhook_deliveries",
            "Webhook deliveries received, by outcome (started, duplicate, or the refusal)",
            ("pack", "source", "outcome"),
            registry=self.registry,
        )

    def count(self, pack: str, source: str, outcome: str) -> None:
        self.deliveries.labels(pack=pack, source=source, outcome=outcome).inc()

    def value(self, pack: str, source: str, outcome: str) -> float:
        found = self.registry.get_sample_value(
            "agentledger_webhook_deliveries_total",
            {"pack": pack, "source": source, "outcome": outcome},
        )
        return found or 0.0
