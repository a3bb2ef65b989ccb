"""What a run leaves beside its log, dropped by housekeeping once the run has ended long enough
ago: its answer streams (the recorded answer stays in the log) and, for a fork, its sandbox; and
later, where the tenant keeps content only so long, the run's content itself
(``activities.ledger.retention``).

How long is the worker's ``AGENTLEDGER_ENDED_RUNS_KEPT_HOURS`` (default 24): long enough for a
customer to reread a streamed answer and a person to look at what a fork wrote; and
``AGENTLEDGER_CONTENT_RETENTION`` (days per tenant; default: kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from temporalio import activity

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger.retention import shred_expired
from agentledger.activities.messages import HousekeepingInput, PrunedLeftovers
from agentledger.activities.sandboxes import drop_ended
from agentledger.activities.surface import LeftoverSteps
from agentledger.domain.state import ENDED


class LeftoverActivities(LeftoverSteps):
    def __init__(
        self, ledger: Ledger, kept: timedelta, retention: Mapping[str, int] | None = None
    ) -> None:
        self._ledger = ledger
        self._kept = kept
        self._retention = retention or {}

    @activity.defn(name="prune_ended_runs")
    def prune_ended_runs(self, params: HousekeepingInput) -> PrunedLeftovers:
        cutoff = params.now - self._kept
        streams = self._ledger.prune_streams(cutoff)
        sandboxes = drop_ended(self._ledger.engine, lambda run_id: self._ended(run_id, cutoff))
        shredded = shred_expired(self._ledger, self._retention, params.now)
        return PrunedLeftovers(answer_streams=streams, sandboxes=sandboxes, runs_shredded=shredded)

    def _ended(self, run_id: str, cutoff: datetime) -> bool:
        run = self._ledger.get_run(run_id)
        return run is not None and run.status in ENDED and run.updated_at < cutoff
