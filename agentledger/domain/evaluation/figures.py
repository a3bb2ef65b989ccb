"""What one run did, read from its events alone, and whether it met its case's expectation.

Every figure here is a fold of the ledger's events for one run id, so a report's claim can be
checked by opening that run (``agentledger show RUN_ID``); nothing is measured on the side except
the wall time the caller passes in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import Field, JsonValue

from agentledger.domain import events as ev
from agentledger.domain._model import Frozen
from agentledger.domain.evaluation.suite import Expectation, ReceiptPattern


class ReceiptSeen(Frozen):
    tool: str
    status: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class RunFigures(Frozen):
    run_id: str
    manifest_hash: str
    status: str
    steps: int = 0
    receipts: tuple[ReceiptSeen, ...] = ()
    denials: tuple[str, ...] = ()
    """``tool:reason_code`` of each ``tool_call_denied``."""
    approvals_asked: int = 0
    insufficient_context: int = 0
    omissions: int = 0
    tokens_by_section: dict[str, int] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    """Tokens charged to the run's budget."""
    citations: tuple[str, ...] = ()
    claimed_operation_ids: tuple[str, ...] = ()
    unexecuted_claims: tuple[str, ...] = ()
    """Claimed operations without a succeeded receipt (of the claimed tool, about the claimed
    resource): an answer that claims what did not happen."""
    answer: str = ""
    failure: str = ""
    wall_seconds: float = 0.0
    end_state_hash: str = ""
    cost: float = 0.0


def figures_of(events: Sequence[ev.RunEvent]) -> RunFigures:
    """The figures of one run's complete event stream (run_started first)."""
    start, kinds = events[0], Counter(e.kind for e in events)
    packets = [e for e in events if isinstance(e, ev.ContextPacketBuilt)]
    charges = [e for e in events if isinstance(e, ev.BudgetCharged)]
    sections: Counter[str] = Counter()
    for packet in packets:
        sections.update(packet.section_tokens)
    receipts, succeeded = _receipts(events)
    return RunFigures(
        run_id=start.run_id,
        manifest_hash=start.manifest_hash,
        steps=kinds["step_started"],
        receipts=receipts,
        denials=tuple(
            f"{e.tool}:{e.reason_code}" for e in events if isinstance(e, ev.ToolCallDenied)
        ),
        approvals_asked=kinds["approval_requested"],
        insufficient_context=sum(
            isinstance(e, ev.DecisionRejected | ev.RunFailed)
            and e.reason_code == "insufficient_context"
            for e in events
        ),
        omissions=sum(p.omission_count for p in packets),
        tokens_by_section=dict(sorted(sections.items())),
        input_tokens=sum(c.input_tokens for c in charges),
        output_tokens=sum(c.output_tokens for c in charges),
        tokens=sum(c.tokens for c in charges),
        **_ending(events, succeeded),
    )


def _receipts(events: Sequence[ev.RunEvent]) -> tuple[tuple[ReceiptSeen, ...], set[str]]:
    """Every receipt with the arguments its call was authorised with; the succeeded ones' ids."""
    authorised: dict[str, dict[str, JsonValue]] = {}
    seen, succeeded = [], set()
    for event in events:
        if isinstance(event, ev.ToolCallAuthorised):
            authorised[event.operation_id] = event.arguments
        elif isinstance(event, ev.ToolReceiptRecorded):
            r = event.receipt
            arguments = authorised.get(r.operation_id, {})
            seen.append(ReceiptSeen(tool=r.tool, status=r.status, arguments=arguments))
            if r.status == "succeeded":
                succeeded.add(r.operation_id)
    return tuple(seen), succeeded


def _ending(events: Sequence[ev.RunEvent], succeeded: set[str]) -> dict[str, Any]:
    """How the run ended: its status, answer, citations and claims, or its failure."""
    end = next((e for e in reversed(events) if isinstance(e, ev.RunCompleted | ev.RunFailed)), None)
    if isinstance(end, ev.RunCompleted):
        about = {
            e.operation_id: (e.tool, e.resource_id)
            for e in events
            if isinstance(e, ev.ToolCallAuthorised)
        }
        unsupported = [
            c.operation_id
            for c in end.claims
            if c.operation_id not in succeeded
            or about.get(c.operation_id) != (c.tool, c.resource_id)
        ]
        unproven = [op for op in end.claimed_operation_ids if op not in succeeded]
        return {
            "status": "completed",
            "answer": end.answer,
            "citations": end.cited_source_ids,
            "claimed_operation_ids": (
                *end.claimed_operation_ids,
                *(c.operation_id for c in end.claims),
            ),
            "unexecuted_claims": (*unproven, *unsupported),
        }
    if isinstance(end, ev.RunFailed):
        return {"status": "failed", "failure": f"{end.reason_code}: {end.message}"}
    return {"status": "running"}


def _matches(seen: ReceiptSeen, pattern: ReceiptPattern) -> bool:
    return (
        seen.tool == pattern.tool
        and seen.status == pattern.status
        and all(seen.arguments.get(k) == v for k, v in pattern.arguments.items())
    )


def problems(expect: Expectation, f: RunFigures) -> tuple[str, ...]:
    """Each way the run missed its expectation, in words (empty: it passed)."""
    out = _outcome(expect, f) + _effects(expect, f)
    if f.unexecuted_claims:
        out.append(f"answer claims operations without a succeeded receipt: {f.unexecuted_claims}")
    lowered = f.answer.lower()
    out += [f"answer says {p!r}" for p in expect.answer_excludes if p.lower() in lowered]
    return tuple(out)


def _outcome(expect: Expectation, f: RunFigures) -> list[str]:
    out: list[str] = []
    if expect.status != "any" and f.status != expect.status:
        why = f" ({f.failure})" if f.failure else ""
        out.append(f"ended {f.status}{why}, expected {expect.status}")
    if expect.end_state_hash is not None and f.end_state_hash != expect.end_state_hash:
        out.append(f"end state {f.end_state_hash[:12]} != expected {expect.end_state_hash[:12]}")
    out += [
        f"answer does not cite {suffix}"
        for suffix in expect.citations
        if not any(c.endswith(suffix) for c in f.citations)
    ]
    if expect.approvals is not None and f.approvals_asked != expect.approvals:
        out.append(f"asked {f.approvals_asked} approvals, expected {expect.approvals}")
    return out


def _effects(expect: Expectation, f: RunFigures) -> list[str]:
    out = [
        f"no {p.status} receipt of {p.tool}{f' {p.arguments}' if p.arguments else ''}"
        for p in expect.receipts
        if not any(_matches(s, p) for s in f.receipts)
    ]
    out += [
        f"a {p.status} receipt of {p.tool} that must not exist"
        for p in expect.no_receipts
        if any(_matches(s, p) for s in f.receipts)
    ]
    for denial in expect.denials:
        wanted = f"{denial.tool}:{denial.reason_code or ''}"
        if not any(d.startswith(wanted) for d in f.denials):
            out.append(f"no denial of {wanted.rstrip(':')}")
    return out
