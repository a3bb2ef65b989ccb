"""Runs of any length at constant cost: the window a state keeps, and the archive of the rest.

A run's histories (receipts, decisions, refusals, evidence, conversation turns, spent approvals,
ended delegations) grow with every action; carried across continue-as-new they would end a long
run as ``state_too_large``. A compaction with a window (``HistoryCompacted.window``) keeps the
latest ``window`` entries of each and moves the rest out of the state. They stay events in the
ledger; the state keeps an ``Archive``: how many left, a digest chained over them, and the one
thing the gate still needs of them (the arguments of settled writes).

Everything current stays whole: verified facts, resources, unresolved errors, pending approvals,
unused grants, rejected approvals (a person's refusal of that exact proposal still binds),
running delegations, the latest output of each delegation, each tool's latest observation, and
the token ids of accepted assertions (``spent_assertions``: bounded by their lifetime instead).

The fold makes the same cut at the same event, so ``project`` of a whole log, ``project`` from its
latest compaction and the state a run carries all agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.state import (
    ApprovalOutcome,
    Archive,
    CompletedAction,
    HandoffRecord,
    WorkingState,
)
from agentledger.domain.tools import ReceiptStatus

WINDOW = 100
"""Entries of each history a bounded state keeps: four times the receipts and decisions a model
step is sent (``compaction.context_state``)."""

_HISTORIES = ("completed_actions", "decisions", "rejected_options", "evidence", "conversation")


def bounded(state: WorkingState, window: int) -> WorkingState:
    """``state`` with each history cut to its latest ``window`` entries, the rest archived."""
    moved: dict[str, Sequence[Any]] = {}
    update: dict[str, Any] = {}
    for name in _HISTORIES:
        entries = getattr(state, name)
        if len(entries) > window:
            moved[name], update[name] = entries[:-window], entries[-window:]
    spent = _spent_approvals(state.approvals, window)
    if spent:
        # In the state's own order: a set's order changes with each process's hash seed, and
        # the digest must be the same wherever the state is folded.
        moved["approvals"] = [a for k, a in state.approvals.items() if k in spent]
        update["approvals"] = {k: a for k, a in state.approvals.items() if k not in spent}
    ended = _ended_handoffs(state.handoffs, window)
    if ended:
        moved["handoffs"] = [h for k, h in state.handoffs.items() if k in ended]
        update["handoffs"] = {k: h for k, h in state.handoffs.items() if k not in ended}
        update["observations"] = {k: o for k, o in state.observations.items() if k not in ended}
    if not moved:
        return state
    update["archived"] = _archive(state.archived, moved, state.last_seq)
    return state.model_copy(update=update)


def _spent_approvals(approvals: Mapping[str, ApprovalOutcome], window: int) -> set[str]:
    """Grants already used and approvals that expired, beyond the latest ``window`` of them."""
    spent = [
        key
        for key, a in approvals.items()
        if (a.decision == "granted" and a.used) or a.decision == "expired"
    ]
    return set(spent[:-window])


def _ended_handoffs(handoffs: Mapping[str, HandoffRecord], window: int) -> set[str]:
    """Ended delegations beyond the latest ``window``, except each handoff's latest output."""
    latest_output = {h.handoff: key for key, h in handoffs.items() if h.status == "completed"}
    ended = [key for key, h in handoffs.items() if h.status != "requested"]
    return set(ended[:-window]) - set(latest_output.values())


def _archive(previous: Archive | None, moved: dict[str, Sequence[Any]], seq: int) -> Archive:
    entries = dict(previous.entries) if previous else {}
    for name, records in moved.items():
        entries[name] = entries.get(name, 0) + len(records)
    digest = sha256_hex(
        {
            "previous": previous.digest if previous else None,
            "through_seq": seq,
            "moved": {name: [r.model_dump(mode="json") for r in rs] for name, rs in moved.items()},
        }
    )
    settled = dict(previous.settled_writes) if previous else {}
    for action in moved.get("completed_actions", ()):
        _settle(settled, action)
    return Archive(
        through_seq=seq,
        entries=dict(sorted(entries.items())),
        digest=digest,
        settled_writes=settled,
    )


def _settle(settled: dict[str, ReceiptStatus], action: CompletedAction) -> None:
    """Writes (every write carries a runtime idempotency key) that succeeded or may have run;
    ``succeeded`` wins over ``unknown``, as it does at the gate."""
    if action.idempotency_key is None or action.status not in ("succeeded", "unknown"):
        return
    if settled.get(action.arguments_digest) != "succeeded":
        settled[action.arguments_digest] = action.status
