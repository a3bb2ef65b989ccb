"""The approval protocol as pure folds: refund runs, a system of record and a clock, no server.

What the workflow does around an approval, step by step, on the domain's own functions: the
gate (``governance.authorize``), the judgement of a decision (``workflows._assertions``'s
signature check, ``approvals.check_approval_decision``, ``approvals.eligibility_refusal``), the
fold (``fold.evolve``/``fold.project``) and compaction (``compaction.compact``). Each run keeps
its ledger (what history committed) and the worker's state; a workflow task records events into
a buffer that only its commit makes durable, and a crash at any point of a task drops the buffer
and rebuilds the worker's state from the ledger (``World.task``). The clock is the World's, so an
approval's expiry, an expired assertion and a grant used too late are all reachable.

``bench.protocol_deep`` drives it with a hypothesis state machine (``python -m bench.protocol``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import JsonValue

from agentledger.domain import events as ev
from agentledger.domain.compaction import compact
from agentledger.domain.decisions import Answer, ToolCallProposal
from agentledger.domain.fold import evolve, project
from agentledger.domain.governance import Allow, Deny, NeedsApproval, authorize
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import Receipt, ReceiptStatus
from bench.protocol_prefix import (
    APPROVERS,
    CONTRACTS,
    MANIFEST,
    ORDERS,
    REFUNDABLE,
    REQUESTER,
    T0,
    read_the_order,
)

MAX_PROPOSALS = 3
"""Proposals a run makes before it gives up (an expired approval is asked again)."""


class Crash(Exception):
    """The worker died in the middle of a workflow task."""


@dataclass
class Refunds:
    """The system of record: what each order may still refund, and each idempotency key's result."""

    left: dict[str, float] = field(default_factory=lambda: dict.fromkeys(ORDERS, REFUNDABLE))
    by_key: dict[str, ReceiptStatus] = field(default_factory=dict)
    paid: list[tuple[str, str]] = field(default_factory=list)
    """(order, idempotency key) of every payment made."""

    def refund(self, order_id: str, amount: float, key: str) -> ReceiptStatus:
        """One transaction under the order's row lock: a key seen before returns its result."""
        if key in self.by_key:
            return self.by_key[key]
        status: ReceiptStatus = "failed"
        if self.left[order_id] >= amount:
            self.left[order_id] -= amount
            self.paid.append((order_id, key))
            status = "succeeded"
        self.by_key[key] = status
        return status


@dataclass
class Run:
    run_id: str
    order_id: str
    ledger: list[ev.RunEvent]
    state: WorkingState
    head: int = 0
    """Where the current execution starts in the ledger (its compaction marker, after one)."""

    def execution(self) -> list[ev.RunEvent]:
        return self.ledger[self.head :]

    def pending(self) -> str | None:
        return next(iter(self.state.pending_approvals), None)


@dataclass
class Task:
    """One workflow task: events recorded into a buffer, durable only at ``commit``."""

    world: World
    run: Run
    crash_at: int | None
    state: WorkingState
    buffer: list[ev.RunEvent] = field(default_factory=list)

    def record(self, cls: type[ev.Envelope], **fields: Any) -> None:
        if self.crash_at == len(self.buffer):
            raise Crash
        event: Any = cls(
            run_id=self.run.run_id,
            seq=self.state.last_seq + 1,
            recorded_at=self.world.now,
            manifest_hash=MANIFEST.hash,
            **fields,
        )
        self.state = evolve(self.state, event)
        self.buffer.append(event)


@dataclass
class World:
    now: datetime = T0
    runs: list[Run] = field(default_factory=list)
    refunds: Refunds = field(default_factory=Refunds)
    crashes: int = 0
    tokens: int = 0

    # ------------------------------------------------------------------ tasks and crashes
    @contextlib.contextmanager
    def task(self, run: Run, crash_at: int | None = None) -> Iterator[Task]:
        """A task that commits when its body ends, or dies at ``crash_at`` (before recording
        that many events, or before its commit when it recorded exactly that many)."""
        task = Task(self, run, crash_at, run.state)
        try:
            yield task
            if crash_at == len(task.buffer):
                raise Crash
        except Crash:
            self.crashes += 1
            self.recover(run)
            raise
        run.ledger.extend(task.buffer)
        run.state = task.state

    def recover(self, run: Run) -> None:
        """A new worker replays the execution's history: the state is what the ledger says."""
        run.state = project(run.execution())

    # ------------------------------------------------------------------ the workflow's steps
    def start(self, order_id: str) -> Run:
        run_id = f"run_{len(self.runs) + 1}"
        events = read_the_order(run_id, order_id, REQUESTER, self.now, MANIFEST.hash)
        run = Run(run_id, order_id, events, project(events))
        self.runs.append(run)
        return run

    def step(self, run: Run, crash_at: int | None) -> str:
        """The run's next task while it waits on nobody; what it did."""
        s = run.state
        with self.task(run, crash_at) as t:
            if s.phase == "acting":
                return self._dispatch(t)
            refunded = [a for a in s.completed_actions if a.tool == "create_refund"]
            if refunded:
                t.record(
                    ev.RunCompleted, answer=f"refund {refunded[-1].status}", cited_source_ids=()
                )
                return "completed"
            if self.proposals(run) >= MAX_PROPOSALS or _denied(run):
                t.record(ev.RunFailed, reason_code="no_refund", message="no approved refund")
                return "failed"
            return self._propose(t)
        raise AssertionError("unreachable")  # pragma: no cover

    def proposals(self, run: Run) -> int:
        return sum(isinstance(e, ev.ApprovalRequested | ev.ToolCallDenied) for e in run.ledger)

    def _propose(self, t: Task) -> str:
        refund: dict[str, JsonValue] = {
            "order_id": t.run.order_id,
            "amount": 25.0,
            "currency": "EUR",
            "reason": "late",
        }
        proposal = ToolCallProposal(tool="create_refund", arguments=refund)
        answer = Answer(answer="A refund needs approval.", proposed_next_action=proposal)
        t.record(ev.DecisionRecorded, step="draft_answer", decision=answer, model_profile="small")
        op = f"op_{t.state.last_seq}"
        gate = self._gate(t.state, proposal, op)
        if isinstance(gate, NeedsApproval):
            t.record(
                ev.ApprovalRequested,
                approval_id=f"apr_{t.state.last_seq + 1}",
                operation_id=op,
                proposal=gate.proposal,
                proposal_digest=gate.proposal_digest,
                requested_by=REQUESTER.user_id,
                approver_role=gate.approver_role,
                expires_at=self.now + timedelta(seconds=MANIFEST.approval_ttl_seconds),
                eligible_approvers=APPROVERS,
            )
            return "requested"
        assert isinstance(gate, Deny), f"a fresh proposal was allowed without approval: {gate}"
        t.record(ev.ToolCallDenied, operation_id=op, tool=proposal.tool,
                 reason_code=gate.reason_code, detail=gate.detail)  # fmt: skip
        return gate.reason_code

    def _dispatch(self, t: Task) -> str:
        """After a grant: the gate again, then the call authorised (its activity scheduled)."""
        proposal = t.state.proposed_action
        assert proposal is not None
        granted = [a for a in t.state.approvals.values() if a.decision == "granted" and not a.used]
        assert granted, "acting without an unused grant"
        op = granted[-1].operation_id
        gate = self._gate(t.state, proposal, op)
        if isinstance(gate, Deny):
            t.record(ev.ToolCallDenied, operation_id=op, tool=proposal.tool,
                     reason_code=gate.reason_code, detail=gate.detail)  # fmt: skip
            return gate.reason_code
        assert isinstance(gate, Allow) and gate.approval_id is not None, gate
        t.record(
            ev.ToolCallAuthorised,
            operation_id=op,
            tool=gate.tool,
            tool_version=gate.tool_version,
            arguments=gate.arguments,
            arguments_digest=gate.arguments_digest,
            idempotency_key=gate.idempotency_key,
            approval_id=gate.approval_id,
            resource_id=t.run.order_id,
        )
        return "authorised"

    def _gate(self, state: WorkingState, proposal: ToolCallProposal, op: str) -> Any:
        return authorize(
            proposal, state, MANIFEST, REQUESTER, self.now,
            contracts=CONTRACTS, step="draft_answer", operation_id=op,
        )  # fmt: skip

    def attempt(self, run: Run, crash: str, crash_at: int | None) -> str:
        """One attempt of the refund activity; ``crash``: ``before`` or ``after`` its commit."""
        (call,) = (c for c in run.state.in_flight.values() if c.tool == "create_refund")
        assert call.idempotency_key is not None
        if crash == "before":
            self.crashes += 1
            return "crashed before commit"
        amount = float(str(call.arguments["amount"]))
        status = self.refunds.refund(run.order_id, amount, call.idempotency_key)
        if crash == "after":
            self.crashes += 1
            return "crashed after commit"
        receipt = Receipt(
            operation_id=call.operation_id, tool=call.tool, tool_version="1.0.0", status=status,
            idempotency_key=call.idempotency_key, observed_at=self.now,
            receipt_id=f"rf_{call.idempotency_key[-8:]}" if status == "succeeded" else None,
            error_code=None if status == "succeeded" else "exceeds_refundable",
        )  # fmt: skip
        with self.task(run, crash_at) as t:
            t.record(ev.ToolReceiptRecorded, receipt=receipt)
        return status

    def expire(self, run: Run, crash_at: int | None) -> str:
        """The approval's timer fires (the clock passed ``expires_at``)."""
        with self.task(run, crash_at) as t:
            for pending in list(t.state.pending_approvals.values()):
                assert pending.expires_at <= self.now, "a timer fired early"
                t.record(ev.ApprovalExpired, approval_id=pending.approval_id)
        return "expired"

    def continue_as_new(self, run: Run, window: int | None, crash_at: int | None) -> str:
        marker = compact(
            run.state, recorded_at=self.now, manifest_hash=MANIFEST.hash, window=window
        )
        if crash_at == 0:
            self.crashes += 1
            self.recover(run)
            raise Crash
        carried = evolve(run.state, marker)
        run.ledger.append(marker)
        run.head = len(run.ledger) - 1
        run.state = project(run.execution())
        assert run.state == carried, "the new execution does not start where the old one ended"
        return "continued"


def _denied(run: Run) -> bool:
    """The gate refused the refund (rejected before, or a grant used after its expiry)."""
    return any(isinstance(e, ev.ToolCallDenied) for e in run.ledger)
