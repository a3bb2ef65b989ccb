"""The metrics' ground truth: counts taken straight from the ledger's events, and a scrape
parsed into comparable samples (shared by ``bench.observe`` and ``tests/observability``).

Written independently of the projection: one rule per event kind saying which counter samples
it stands for, so a projection that skips, doubles or mislabels an event shows up as a
difference.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from agentledger.activities.ledger import Ledger
from agentledger.domain import events as ev

Sample = tuple[str, tuple[tuple[str, str], ...]]
Row = tuple[str, dict[str, str], float]


def sample(name: str, **labels: str) -> Sample:
    return name, tuple(sorted(labels.items()))


def scraped_counters(text: str) -> dict[Sample, float]:
    """Every agentledger counter sample (and histogram count) of a scrape, zeros left out."""
    found: dict[Sample, float] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("agentledger_"):
            continue
        for s in family.samples:
            counted = s.name.endswith("_total") or (
                family.type == "histogram" and s.name.endswith("_count")
            )
            if counted and s.value:
                found[sample(s.name, **s.labels)] = s.value
    return found


def counter_deltas(
    before: Mapping[Sample, float], after: Mapping[Sample, float]
) -> Counter[Sample]:
    return Counter({k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)})


def mismatches(scraped: Mapping[Sample, float], expected: Mapping[Sample, float]) -> list[str]:
    """Samples whose value differs (the append-latency count is per call, not per event)."""
    keys = sorted((set(scraped) | set(expected)) - {sample(LATENCY_COUNT)})
    return [
        f"{name}{dict(labels)}: scraped {scraped.get((name, labels), 0)}, "
        f"ledger {expected.get((name, labels), 0)}"
        for name, labels in keys
        if scraped.get((name, labels), 0) != expected.get((name, labels), 0)
    ]


LATENCY_COUNT = "agentledger_ledger_append_seconds_count"


def ledger_counters(events: Iterable[ev.RunEvent], ledger: Ledger) -> dict[Sample, float]:
    """What the counters must say for ``events`` (whole runs, as ``ledger.read`` gives them)."""
    events = list(events)
    packs = {e.run_id: e.work_order.pack for e in events if isinstance(e, ev.RunStarted)}
    requested = {(e.run_id, e.approval_id) for e in events if isinstance(e, ev.ApprovalRequested)}
    counts: defaultdict[Sample, float] = defaultdict(float)
    for e in events:
        counts[sample("agentledger_ledger_events_total", kind=e.kind)] += 1
        rows = [*_runs(e, packs), *_model(e, ledger), *_calls(e, packs)]
        rows += [*_tools(e), *_others(e, requested)]
        for name, labels, amount in rows:
            counts[sample(f"agentledger_{name}", **labels)] += amount
    return {k: v for k, v in counts.items() if v}


def _runs(e: ev.RunEvent, packs: Mapping[str, str]) -> Iterator[Row]:
    pack = packs.get(e.run_id, "unknown")
    if isinstance(e, ev.RunStarted):
        yield "runs_started_total", {"pack": pack}, 1
    elif isinstance(e, ev.RunCompleted):
        yield "runs_ended_total", {"pack": pack, "status": "completed"}, 1
    elif isinstance(e, ev.RunFailed):
        yield "runs_ended_total", {"pack": pack, "status": "failed"}, 1
        yield "run_failures_total", {"pack": pack, "reason_code": e.reason_code}, 1
        if e.reason_code == "insufficient_context":
            yield "insufficient_context_total", {"outcome": "run_failed"}, 1
    elif isinstance(e, ev.StepStarted):
        yield "steps_total", {"step": e.step}, 1


def _model(e: ev.RunEvent, ledger: Ledger) -> Iterator[Row]:
    if isinstance(e, ev.ContextPacketBuilt):
        yield "context_packets_total", {"step": e.step}, 1
        yield "context_tokens_total", {"step": e.step}, e.total_tokens
        yield "context_omissions_total", {"step": e.step}, e.omission_count
    elif isinstance(e, ev.DecisionRecorded):
        yield "decisions_total", {"step": e.step, "model_profile": e.model_profile}, 1
    elif isinstance(e, ev.DecisionRejected):
        yield "decisions_rejected_total", {"step": e.step, "reason_code": e.reason_code}, 1
        if e.reason_code == "insufficient_context":
            yield "insufficient_context_total", {"outcome": "ask_user"}, 1
    elif isinstance(e, ev.BudgetCharged) and e.reason.startswith("model:"):
        body: dict[str, Any] = ledger.get_manifest_body(e.manifest_hash) or {}
        profile = body.get("model", {}).get("name", "unknown")
        keys = {"model_profile": profile, "step": e.reason.split(":", 1)[1]}
        yield "model_calls_total", keys, 1
        yield "model_charged_tokens_total", keys, e.tokens
        yield "model_tokens_total", {**keys, "type": "input"}, e.input_tokens
        yield "model_tokens_total", {**keys, "type": "cached"}, e.cached_tokens
        yield "model_tokens_total", {**keys, "type": "output"}, e.output_tokens


def _calls(e: ev.RunEvent, packs: Mapping[str, str]) -> Iterator[Row]:
    if not isinstance(e, ev.ModelCalled):
        return
    keys = {"pack": packs.get(e.run_id, "unknown"), "provider": e.provider, "model": e.model}
    yield "model_call_tokens_total", {**keys, "type": "input"}, e.input_tokens
    yield "model_call_tokens_total", {**keys, "type": "cached"}, e.cached_tokens
    yield "model_call_tokens_total", {**keys, "type": "output"}, e.output_tokens
    if e.cost is not None and e.currency is not None:
        yield "model_cost_total", {**keys, "currency": e.currency}, float(e.cost)


def _tools(e: ev.RunEvent) -> Iterator[Row]:
    if isinstance(e, ev.ToolCallDenied):
        yield "tool_calls_total", {"tool": e.tool, "outcome": "denied"}, 1
        yield "tool_denials_total", {"tool": e.tool, "reason_code": e.reason_code}, 1
    elif isinstance(e, ev.ToolReceiptRecorded):
        yield "tool_calls_total", {"tool": e.receipt.tool, "outcome": e.receipt.status}, 1
    elif isinstance(e, ev.ApprovalRequested):
        yield "approvals_requested_total", {"tool": e.proposal.tool}, 1
    elif isinstance(e, ev.ApprovalAttemptRefused):
        yield "approval_attempts_refused_total", {"reason_code": e.reason_code}, 1


def _others(e: ev.RunEvent, requested: set[tuple[str, str]]) -> Iterator[Row]:
    if isinstance(e, ev.ApprovalGranted | ev.ApprovalRejected | ev.ApprovalExpired):
        decision = {"decision": e.kind.split("_", 1)[1]}
        yield "approvals_decided_total", decision, 1
        if (e.run_id, e.approval_id) in requested:
            yield "approval_wait_seconds_count", decision, 1
    elif isinstance(e, ev.ErrorRecorded):
        yield "errors_total", {"code": e.code}, 1
    elif isinstance(e, ev.HistoryCompacted):
        yield "compactions_total", {}, 1
    elif isinstance(e, ev.MemoryProposed):
        yield "memories_proposed_total", {"category": e.category}, 1
    elif isinstance(e, ev.ReplyAwaited):
        yield "replies_awaited_total", {"reason": e.reason}, 1
    elif isinstance(e, ev.UserReplied):
        yield "replies_total", {}, 1
    elif isinstance(e, ev.ReplyRefused):
        yield "replies_refused_total", {"reason_code": e.reason_code}, 1
    elif isinstance(e, ev.ConversationClosed):
        yield "conversations_closed_total", {"reason": e.reason}, 1
