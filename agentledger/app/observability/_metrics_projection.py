"""The metrics projection: each newly appended event moves the counters it stands for.

It is fed by the ledger (``Ledger.observe``) with the events an append actually stored, after
the commit, so a replayed workflow or a retried activity, which store nothing new, count
nothing. What an event does not carry itself (a run's pack, a manifest's model profile, when an
approval was requested) comes from what this process appended before, else from the ledger.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from agentledger.app.observability._labels import BoundedLabels
from agentledger.app.observability._metrics_families import Families
from agentledger.domain import events as ev

UNKNOWN = "unknown"
MODEL_CHARGE = "model:"
"""``BudgetCharged.reason`` of a model call: ``model:<step>`` (``domain.steps._charge``)."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RunFacts(Protocol):
    """What the projection asks the ledger when this process did not see it appended."""

    def pack_of(self, run_id: str) -> str | None: ...
    def model_profile_of(self, manifest_hash: str) -> str | None: ...
    def approval_requested_at(self, run_id: str, approval_id: str) -> datetime | None: ...


class _Recent(Generic[K, V]):
    """A bounded, thread-safe memo: the newest ``size`` entries."""

    def __init__(self, size: int) -> None:
        self._size, self._items, self._lock = size, OrderedDict[K, V](), threading.Lock()

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            if len(self._items) > self._size:
                self._items.popitem(last=False)

    def get(self, key: K, miss: Callable[[], V | None]) -> V | None:
        with self._lock:
            found = self._items.get(key)
        if found is None and (found := miss()) is not None:
            self.put(key, found)
        return found


class LedgerProjection:
    """An ``AppendObserver`` (``activities.ledger``) over one registry's ``Families``."""

    def __init__(self, families: Families, facts: RunFacts, memo_size: int = 10_000) -> None:
        self.f, self._facts, self._labels = families, facts, BoundedLabels()
        self._packs = _Recent[str, str](memo_size)
        self._profiles = _Recent[str, str](256)
        self._requested = _Recent[tuple[str, str], datetime](memo_size)

    def appended(self, events: Sequence[ev.RunEvent], seconds: float) -> None:
        self.f.append_seconds.observe(seconds)
        for event in events:
            self.f.events.labels(event.kind).inc()
            handler = _HANDLERS.get(type(event))
            if handler is not None:
                handler(self, event)

    # --- what events do not carry ------------------------------------------------------------

    def label(self, name: str, raw: str | None) -> str:
        return self._labels.value(name, raw)

    def pack(self, run_id: str) -> str:
        found = self._packs.get(run_id, lambda: self._facts.pack_of(run_id))
        return self.label("pack", found or UNKNOWN)

    def profile(self, manifest_hash: str) -> str:
        found = self._profiles.get(
            manifest_hash, lambda: self._facts.model_profile_of(manifest_hash)
        )
        return self.label("model_profile", found or UNKNOWN)

    def requested_at(self, run_id: str, approval_id: str) -> datetime | None:
        key = (run_id, approval_id)
        return self._requested.get(key, lambda: self._facts.approval_requested_at(*key))

    # --- events ------------------------------------------------------------------------------

    def run_started(self, e: ev.RunStarted) -> None:
        self._packs.put(e.run_id, e.work_order.pack)
        self.f.runs_started.labels(self.pack(e.run_id)).inc()

    def run_completed(self, e: ev.RunCompleted) -> None:
        self.f.runs_ended.labels(self.pack(e.run_id), "completed").inc()

    def run_failed(self, e: ev.RunFailed) -> None:
        pack = self.pack(e.run_id)
        self.f.runs_ended.labels(pack, "failed").inc()
        self.f.run_failures.labels(pack, self.label("reason_code", e.reason_code)).inc()
        if e.reason_code == "insufficient_context":
            self.f.insufficient.labels("run_failed").inc()

    def step_started(self, e: ev.StepStarted) -> None:
        self.f.steps.labels(self.label("step", e.step)).inc()

    def packet_built(self, e: ev.ContextPacketBuilt) -> None:
        step = self.label("step", e.step)
        self.f.packets.labels(step).inc()
        self.f.packet_tokens.labels(step).inc(e.total_tokens)
        self.f.omissions.labels(step).inc(e.omission_count)

    def decision(self, e: ev.DecisionRecorded) -> None:
        step = self.label("step", e.step)
        self.f.decisions.labels(step, self.label("model_profile", e.model_profile)).inc()

    def rejected(self, e: ev.DecisionRejected) -> None:
        code = self.label("reason_code", e.reason_code)
        self.f.rejected.labels(self.label("step", e.step), code).inc()
        if e.reason_code == "insufficient_context":
            self.f.insufficient.labels("ask_user").inc()

    def charged(self, e: ev.BudgetCharged) -> None:
        if not e.reason.startswith(MODEL_CHARGE):
            return
        keys = (self.profile(e.manifest_hash), self.label("step", e.reason[len(MODEL_CHARGE) :]))
        self.f.model_calls.labels(*keys).inc()
        self.f.charged.labels(*keys).inc(e.tokens)
        for kind, count in (
            ("input", e.input_tokens),
            ("cached", e.cached_tokens),
            ("output", e.output_tokens),
        ):
            self.f.tokens.labels(*keys, kind).inc(count)

    def model_called(self, e: ev.ModelCalled) -> None:
        """Tokens and cost by pack, provider and model (the route that answered)."""
        pack, provider = self.pack(e.run_id), self.label("provider", e.provider)
        keys = (pack, provider, self.label("model", e.model))
        for kind, count in (
            ("input", e.input_tokens),
            ("cached", e.cached_tokens),
            ("output", e.output_tokens),
        ):
            self.f.call_tokens.labels(*keys, kind).inc(count)
        if e.cost is not None and e.currency is not None:
            self.f.cost.labels(*keys, self.label("currency", e.currency)).inc(float(e.cost))

    def tool_denied(self, e: ev.ToolCallDenied) -> None:
        tool = self.label("tool", e.tool)
        self.f.tool_calls.labels(tool, "denied").inc()
        self.f.denials.labels(tool, self.label("reason_code", e.reason_code)).inc()

    def receipt(self, e: ev.ToolReceiptRecorded) -> None:
        self.f.tool_calls.labels(self.label("tool", e.receipt.tool), e.receipt.status).inc()

    def approval_requested(self, e: ev.ApprovalRequested) -> None:
        self._requested.put((e.run_id, e.approval_id), e.recorded_at)
        self.f.requested.labels(self.label("tool", e.proposal.tool)).inc()

    def approval_decided(
        self, e: ev.ApprovalGranted | ev.ApprovalRejected | ev.ApprovalExpired
    ) -> None:
        decision = e.kind.removeprefix("approval_")
        self.f.decided.labels(decision).inc()
        requested = self.requested_at(e.run_id, e.approval_id)
        if requested is not None:
            self.f.wait.labels(decision).observe((e.recorded_at - requested).total_seconds())

    def approval_refused(self, e: ev.ApprovalAttemptRefused) -> None:
        self.f.refused.labels(self.label("reason_code", e.reason_code)).inc()

    def error(self, e: ev.ErrorRecorded) -> None:
        self.f.errors.labels(self.label("code", e.code)).inc()

    def compacted(self, e: ev.HistoryCompacted) -> None:
        self.f.compactions.inc()

    def memory(self, e: ev.MemoryProposed) -> None:
        self.f.memories.labels(self.label("category", e.category)).inc()

    def awaited(self, e: ev.ReplyAwaited) -> None:
        self.f.awaited.labels(e.reason).inc()

    def replied(self, e: ev.UserReplied) -> None:
        self.f.replies.inc()

    def reply_refused(self, e: ev.ReplyRefused) -> None:
        self.f.replies_refused.labels(self.label("reason_code", e.reason_code)).inc()

    def closed(self, e: ev.ConversationClosed) -> None:
        self.f.closed.labels(e.reason).inc()


_HANDLERS: dict[type, Callable[[LedgerProjection, Any], None]] = {
    ev.RunStarted: LedgerProjection.run_started,
    ev.RunCompleted: LedgerProjection.run_completed,
    ev.RunFailed: LedgerProjection.run_failed,
    ev.StepStarted: LedgerProjection.step_started,
    ev.ContextPacketBuilt: LedgerProjection.packet_built,
    ev.DecisionRecorded: LedgerProjection.decision,
    ev.DecisionRejected: LedgerProjection.rejected,
    ev.BudgetCharged: LedgerProjection.charged,
    ev.ModelCalled: LedgerProjection.model_called,
    ev.ToolCallDenied: LedgerProjection.tool_denied,
    ev.ToolReceiptRecorded: LedgerProjection.receipt,
    ev.ApprovalRequested: LedgerProjection.approval_requested,
    ev.ApprovalGranted: LedgerProjection.approval_decided,
    ev.ApprovalRejected: LedgerProjection.approval_decided,
    ev.ApprovalExpired: LedgerProjection.approval_decided,
    ev.ApprovalAttemptRefused: LedgerProjection.approval_refused,
    ev.ErrorRecorded: LedgerProjection.error,
    ev.HistoryCompacted: LedgerProjection.compacted,
    ev.MemoryProposed: LedgerProjection.memory,
    ev.ReplyAwaited: LedgerProjection.awaited,
    ev.UserReplied: LedgerProjection.replied,
    ev.ReplyRefused: LedgerProjection.reply_refused,
    ev.ConversationClosed: LedgerProjection.closed,
}
