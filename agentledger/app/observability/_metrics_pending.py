"""Approvals pending, read from the ledger's ``approvals`` read model at scrape time.

A gauge kept by adding requests and subtracting decisions would be wrong in a fleet: the worker
that appended a request is rarely the one that appends its decision, and a restarted worker
starts from zero. The read model is the whole fleet's answer, so every worker reports the same
value (aggregate with ``max``, never ``sum``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Protocol

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agentledger.app.observability._labels import BoundedLabels

log = logging.getLogger(__name__)


class PendingApprovals(Protocol):
    def pending_approvals(self) -> dict[str, tuple[int, datetime]]: ...


class PendingApprovalsCollector(Collector):
    def __init__(self, source: PendingApprovals) -> None:
        self._source, self._labels = source, BoundedLabels()

    def describe(self) -> list[GaugeMetricFamily]:
        return list(self._families())  # no query when the collector is registered

    def collect(self) -> Iterator[GaugeMetricFamily]:
        pending, soonest = self._families()
        try:
            rows = self._source.pending_approvals()
        except Exception:  # a scrape during a database outage still serves the counters
            log.warning("pending approvals unavailable for this scrape", exc_info=True)
            return
        for tool, (count, expires_at) in sorted(rows.items()):
            label = [self._labels.value("tool", tool)]
            pending.add_metric(label, count)
            soonest.add_metric(label, expires_at.timestamp())
        yield pending
        yield soonest

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "agentledger_approvals_pending",
                "Approvals waiting for a decision, fleet-wide (the approvals read model)",
                labels=["tool"],
            ),
            GaugeMetricFamily(
                "agentledger_approval_next_expiry_timestamp_seconds",
                "When the soonest pending approval expires (Unix time)",
                labels=["tool"],
            ),
        )
