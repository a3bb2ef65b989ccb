"""Every metric the ledger projection exports, declared once on one registry.

The README's "Observe" table lists the same names; ``tests/observability`` checks that it does.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram

APPEND_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Seconds: an SQLite append takes about a millisecond, a PostgreSQL one a few."""

WAIT_BUCKETS = (10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 604800)
"""Seconds: people answer in minutes to days."""

_Make = Callable[..., Counter]


class Families:
    """The projection's counters and histograms (the pending-approval gauges are collected
    from the read model at scrape time: ``_metrics_pending``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(f"agentledger_{name}", doc, labels, registry=registry)

        self.events = counter("ledger_events", "Events newly appended, by kind", "kind")
        self.append_seconds = Histogram(
            "agentledger_ledger_append_seconds",
            "Time one append call took (encode, insert, read models, commit)",
            registry=registry,
            buckets=APPEND_BUCKETS,
        )
        self.runs_started = counter("runs_started", "Runs started", "pack")
        self.runs_ended = counter("runs_ended", "Runs ended", "pack", "status")
        self.run_failures = counter("run_failures", "Runs failed", "pack", "reason_code")
        self.steps = counter("steps", "Steps started", "step")
        self._context(counter)
        self._model(counter)
        self._tools(counter)
        self._approvals(counter, registry)
        self._conversation(counter)
        self.errors = counter("errors", "Errors recorded (open for a person)", "code")
        self.compactions = counter("compactions", "History compactions (each precedes a CAN)")
        self.memories = counter("memories_proposed", "Memories proposed", "category")

    def _context(self, counter: _Make) -> None:
        self.packets = counter("context_packets", "Context packets built", "step")
        self.packet_tokens = counter("context_tokens", "Tokens in built packets", "step")
        self.omissions = counter("context_omissions", "Candidates left out of packets", "step")
        self.insufficient = counter(
            "insufficient_context", "Steps refused for missing context", "outcome"
        )

    def _model(self, counter: _Make) -> None:
        self.decisions = counter("decisions", "Decisions recorded", "step", "model_profile")
        self.rejected = counter("decisions_rejected", "Decisions rejected", "step", "reason_code")
        self.model_calls = counter("model_calls", "Model calls charged", "model_profile", "step")
        self.tokens = counter(
            "model_tokens", "Tokens the provider reported", "model_profile", "step", "type"
        )
        self.charged = counter(
            "model_charged_tokens", "Tokens charged to budgets", "model_profile", "step"
        )
        self.call_tokens = counter(
            "model_call_tokens",
            "Tokens of each model call, by who answered it",
            "pack",
            "provider",
            "model",
            "type",
        )
        self.cost = counter(
            "model_cost",
            "What model calls cost at their frozen price (priced calls only)",
            "pack",
            "provider",
            "model",
            "currency",
        )

    def _tools(self, counter: _Make) -> None:
        self.tool_calls = counter("tool_calls", "Tool calls by outcome", "tool", "outcome")
        self.denials = counter("tool_denials", "Tool calls denied", "tool", "reason_code")

    def _approvals(self, counter: _Make, registry: CollectorRegistry) -> None:
        self.requested = counter("approvals_requested", "Approvals requested", "tool")
        self.decided = counter("approvals_decided", "Approvals decided", "decision")
        self.refused = counter(
            "approval_attempts_refused", "Approval attempts refused", "reason_code"
        )
        self.wait = Histogram(
            "agentledger_approval_wait_seconds",
            "From an approval's request to its decision (recorded times)",
            ["decision"],
            registry=registry,
            buckets=WAIT_BUCKETS,
        )

    def _conversation(self, counter: _Make) -> None:
        self.awaited = counter("replies_awaited", "Times a run waited on its customer", "reason")
        self.replies = counter("replies", "Customer replies taken")
        self.replies_refused = counter("replies_refused", "Replies refused", "reason_code")
        self.closed = counter("conversations_closed", "Conversations closed", "reason")
