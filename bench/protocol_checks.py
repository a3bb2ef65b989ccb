"""What must hold of the pure protocol (``bench.protocol_world``) after every step, and at rest.

Each run's new events are checked once, as they reach its ledger (the facts they establish are
kept: what was asked, decided, granted and used), so a check costs what a step adds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from agentledger.domain import events as ev
from agentledger.domain.approvals import MAX_RECORDED_REFUSALS
from agentledger.domain.fold import project
from bench.protocol_prefix import APPROVERS, ISSUER, TTL_SECONDS
from bench.protocol_world import World

REST_ROUNDS = 40
"""Moves a run may take to reach its end once nobody interferes (it needs fewer than 15)."""


@dataclass(frozen=True)
class Sent:
    """A decision as sent to a run's update."""

    run_id: str
    token: str
    who: str
    approval_id: str
    digest: str
    approve: bool


@dataclass
class _Seen:
    """What one run's ledger established so far."""

    checked: int = 0
    asked: dict[str, ev.ApprovalRequested] = field(default_factory=dict)
    decided: set[str] = field(default_factory=set)
    granted: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)
    token_ids: set[str] = field(default_factory=set)
    refusals: Counter[str] = field(default_factory=Counter)
    """Recorded refused attempts per approval, in the current execution."""


class Checks:
    def __init__(self, world: World) -> None:
        self.world = world
        self.seen: dict[str, _Seen] = {}
        self.keys: dict[str, str] = {}
        """Idempotency key -> order, of every refund a grant authorised."""

    def after_step(self) -> None:
        for run in self.world.runs:
            seen = self.seen.setdefault(run.run_id, _Seen())
            for index, event in enumerate(run.ledger[seen.checked :], start=seen.checked):
                assert event.seq == index + 1, f"{run.run_id}: #{event.seq} at position {index + 1}"
                self._event(seen, event, run.order_id)
            seen.checked = len(run.ledger)
            assert run.state.last_seq == len(run.ledger), f"{run.run_id}: state and ledger differ"
        paid = [order for order, _ in self.world.refunds.paid]
        assert len(paid) == len(set(paid)), f"an order was refunded twice: {paid}"
        for order, key in self.world.refunds.paid:
            assert self.keys.get(key) == order, f"{order} refunded under {key}, no grant's call"

    def _event(self, seen: _Seen, e: ev.RunEvent, order_id: str) -> None:
        if isinstance(e, ev.ApprovalRequested):
            assert e.expires_at == e.recorded_at + timedelta(seconds=TTL_SECONDS)
            seen.asked[e.approval_id] = e
        elif isinstance(e, ev.ApprovalGranted | ev.ApprovalRejected | ev.ApprovalExpired):
            self._decision(seen, e)
        elif isinstance(e, ev.ApprovalAttemptRefused):
            seen.refusals[e.approval_id] += 1
            assert seen.refusals[e.approval_id] <= MAX_RECORDED_REFUSALS, "refusals uncapped"
        elif isinstance(e, ev.HistoryCompacted):
            seen.refusals.clear()  # a new execution: its own allowance
        elif isinstance(e, ev.ToolReceiptRecorded) and e.receipt.tool == "create_refund":
            paid = e.receipt.idempotency_key in {k for _, k in self.world.refunds.paid}
            assert (e.receipt.status == "succeeded") == paid, (
                f"the receipt of {e.receipt.operation_id} says {e.receipt.status}"
            )
        elif isinstance(e, ev.ToolCallAuthorised) and e.tool == "create_refund":
            assert e.approval_id in seen.granted, f"{e.operation_id} authorised without a grant"
            assert e.approval_id not in seen.used, f"grant {e.approval_id} used twice"
            assert e.idempotency_key is not None
            seen.used.add(e.approval_id)
            self.keys[e.idempotency_key] = order_id

    def _decision(
        self, seen: _Seen, e: ev.ApprovalGranted | ev.ApprovalRejected | ev.ApprovalExpired
    ) -> None:
        asked = seen.asked.get(e.approval_id)
        assert asked is not None, f"{e.approval_id} decided, never asked"
        assert e.approval_id not in seen.decided, f"{e.approval_id} decided twice"
        seen.decided.add(e.approval_id)
        if isinstance(e, ev.ApprovalExpired):
            assert e.recorded_at >= asked.expires_at, f"{e.approval_id} expired early"
            return
        assert e.recorded_at < asked.expires_at, f"{e.approval_id} decided after its expiry"
        assert e.approver in APPROVERS and e.approver in (asked.eligible_approvers or ())
        assert e.assertion is not None and e.assertion.key_id == ISSUER.kid, "unpinned signer"
        assert e.assertion.subject == e.approver, "signed by someone else"
        assert e.assertion.token_id not in seen.token_ids, "a token accepted twice"
        seen.token_ids.add(e.assertion.token_id)
        if isinstance(e, ev.ApprovalGranted):
            assert e.proposal_digest == asked.proposal_digest, "granted another proposal"
            seen.granted.add(e.approval_id)

    def drive_to_rest(self) -> None:
        """Replay agrees with the live state; then, left alone, every run reaches its end."""
        world = self.world
        for run in world.runs:
            assert project(run.ledger) == run.state == project(run.execution()), run.run_id
        for _ in range(REST_ROUNDS):
            running = [r for r in world.runs if r.state.status == "running"]
            if not running:
                break
            for run in running:
                if run.state.pending_approvals:
                    world.now += timedelta(seconds=TTL_SECONDS)
                    world.expire(run, None)
                elif run.state.in_flight:
                    world.attempt(run, "none", None)
                else:
                    world.step(run, None)
            self.after_step()
        stuck = [r.run_id for r in world.runs if r.state.status == "running"]
        assert not stuck, f"runs that never ended: {stuck}"
