"""What an approver reads before deciding, from the run's own events: the conversation that led
to the proposal, and what the call changes (the resource's verified facts when it was proposed,
beside what the call's receipt recorded once it ran).

Before the call runs nothing can say what it *will* do, so ``after`` is filled only from a
succeeded receipt of the approved operation (``recorded``), never predicted from the arguments
(a refund's ``amount`` argument is not the order's ``amount`` fact).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentledger.activities.ledger import ApprovalRow, Ledger
from agentledger.api.views import approval_view
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from agentledger.domain.tools import Receipt, VerifiedFact


def conversation(events: list[ev.RunEvent], through_seq: int | None = None) -> list[dict[str, Any]]:
    """The customer's request, the agent's questions and answers and the customer's replies,
    up to ``through_seq``; refused replies are not part of it (the timeline shows them)."""
    turns = []
    for e in events:
        if through_seq is not None and e.seq > through_seq:
            break
        match e:
            case ev.RunStarted():
                order = e.work_order
                turns.append(_turn(e, order.principal.user_id, "request", order.request_text))
            case ev.ReplyAwaited():
                kind = "question" if e.reason == "question" else "answer"
                turns.append(_turn(e, "agent", kind, e.message))
            case ev.UserReplied():
                turns.append(_turn(e, e.principal_id, "reply", e.text))
            case ev.ConversationClosed():
                turns.append(_turn(e, "agent", "closing", e.message))
    return turns


def _turn(e: ev.RunEvent, sender: str, kind: str, text: str) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "sender": sender,
        "kind": kind,
        "text": text,
        "at": e.recorded_at.isoformat(),
    }


def requested(events: list[ev.RunEvent], approval_id: str) -> ev.ApprovalRequested | None:
    return next(
        (e for e in events if isinstance(e, ev.ApprovalRequested) and e.approval_id == approval_id),
        None,
    )


def change(
    events: list[ev.RunEvent], row: ApprovalRow, manifest: dict[str, Any] | None
) -> dict[str, Any]:
    """The resource the call is about, its facts as verified when the call was proposed, the
    facts the call's succeeded receipt recorded about it (``after``), and the limits the gate
    held the arguments to (the contract's fact bounds, beside the facts they were held to)."""
    asked = requested(events, row.approval_id)
    upto = [e for e in events if asked is None or e.seq < asked.seq]
    terms = _terms(manifest, row.tool)
    argument = terms.get("resource_argument")
    resource = row.arguments.get(argument) if isinstance(argument, str) else None
    before = _facts_about(project(upto).verified_facts.values(), resource, row.arguments)
    receipt = _receipt(events, row.operation_id)
    after = None
    if receipt is not None and receipt.status == "succeeded":
        after = _facts_about(receipt.facts, resource, row.arguments)
    names = list(dict.fromkeys([*before, *(after or {})]))
    return {
        "tool": row.tool,
        "operation_id": row.operation_id,
        "resource_argument": argument if resource is not None else None,
        "resource_id": resource,
        "arguments": row.arguments,
        "rows": [
            {"name": n, "before": before.get(n), "after": (after or {}).get(n)} for n in names
        ],
        "bounds": _bounds(terms, row.arguments, before),
        "outcome": receipt.status if receipt is not None else None,
        "receipt_view": _headline(receipt),
        "recorded": after is not None,
    }


def _headline(receipt: Receipt | None) -> str | None:
    """The first line of what the receipt says to people (its user view, or its error)."""
    if receipt is None:
        return None
    return (receipt.user_view or receipt.error_message or receipt.status).split(" | ", 1)[0]


def _terms(manifest: dict[str, Any] | None, tool: str) -> dict[str, Any]:
    """The tool's contract terms as the run froze them (empty in manifests from before)."""
    terms = (manifest or {}).get("tool_terms") or []
    found = next((t for t in terms if isinstance(t, dict) and t.get("name") == tool), None)
    return found or {}


def _bounds(
    terms: dict[str, Any], arguments: dict[str, Any], before: dict[str, Any]
) -> list[dict[str, Any]]:
    return [
        {
            "argument": b["argument"],
            "value": arguments.get(b["argument"]),
            "relation": b["relation"],
            "fact": b["fact"],
            "fact_value": before.get(b["fact"]),
        }
        for b in terms.get("fact_bounds") or []
        if isinstance(b, dict)
    ]


def _about(fact: VerifiedFact, resource: Any, arguments: dict[str, Any]) -> bool:
    """A fact about the declared resource or, when the contract declares none (manifests frozen
    before tool terms), about any resource the arguments name."""
    if fact.resource_id is None:
        return False
    if resource is not None:
        return bool(fact.resource_id == resource)
    return fact.resource_id in {v for v in arguments.values() if isinstance(v, str)}


def _facts_about(
    facts: Iterable[VerifiedFact], resource: Any, arguments: dict[str, Any]
) -> dict[str, Any]:
    return {f.name: f.value for f in facts if _about(f, resource, arguments)}


def _receipt(events: list[ev.RunEvent], operation_id: str) -> Receipt | None:
    return next(
        (
            e.receipt
            for e in events
            if isinstance(e, ev.ToolReceiptRecorded) and e.receipt.operation_id == operation_id
        ),
        None,
    )


def approval_context(ledger: Ledger, events: list[ev.RunEvent], row: ApprovalRow) -> dict[str, Any]:
    """``conversation`` and ``change`` of one approval, for the inbox and the run's approvals;
    the resource is the one the manifest the approval was requested under declares."""
    asked = requested(events, row.approval_id)
    manifest = ledger.get_manifest_body(asked.manifest_hash) if asked is not None else None
    return {
        "conversation": conversation(events, asked.seq if asked is not None else None),
        "change": change(events, row, manifest),
    }


def approvals_in_context(ledger: Ledger, rows: list[ApprovalRow]) -> list[dict[str, Any]]:
    """Each approval as the API shows it (``views.approval_view``) with its context; each
    run's log is read once."""
    logs: dict[str, list[ev.RunEvent]] = {}
    shown = []
    for row in rows:
        events = logs.get(row.run_id)
        if events is None:
            events = logs[row.run_id] = ledger.read(row.run_id)
        shown.append({**approval_view(row), **approval_context(ledger, events, row)})
    return shown
