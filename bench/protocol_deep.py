"""The approval protocol explored deeply: a hypothesis state machine over the pure protocol.

It drives ``bench.protocol_world`` (the workflow's steps on the domain's functions, no server),
so thousands of examples of tens of steps fit in minutes: refund runs of two orders (several
runs may claim one), decisions signed for anyone the directory knows or does not, forgeries,
two approvers deciding at once, a used assertion sent again, the clock moved past approvals and
assertions, approval timers firing, the refund activity crashing before or after its commit,
continue-as-new (with windows), a worker crash at any point of any task, and replay.

After every step (``Checks``): each order refunded at most once, only under a key a grant
authorised, and each receipt saying whether its refund was paid; each approval decided at most
once, granted only before it expired, by an eligible approver with the pinned key, for the
digest it asked about, and used at most once; an expiry only once due; no token accepted twice;
every ledger contiguous, folding to the worker's state. At the end replay agrees with the live
state, and each run, left alone, reaches its end.

``explore`` runs it and counts how often each rule fired and what came of it;
``python -m bench.protocol`` prints the figures, ``tests/domain/test_protocol_deep.py`` runs a
few examples in CI. ``bench.protocol_machine`` is the same protocol against a real server.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from agentledger.domain.compaction import can_compact
from bench.protocol_checks import Checks, Sent
from bench.protocol_desk import forged, judge, record_decision, sign, validate
from bench.protocol_prefix import APPROVERS, ISSUER, ORDERS, TTL_SECONDS
from bench.protocol_world import Crash, Run, World

MAX_RUNS = 6
"""Runs an example starts, at most two running at a time."""
PICK = st.integers(0, 7)
CRASH_AT = st.one_of(st.none(), st.none(), st.integers(0, 3))
"""Where a task dies: before recording its n-th event, or before its commit (``None``: never)."""
DECIDERS = (*APPROVERS, *APPROVERS, "usr_73", "agent_2", "ops_globex", "mallory")
FORGERIES = ("unsigned", "unpinned_key", "stale_digest", "other_audience", "claims_another",
             "tampered")  # fmt: skip
SIGNED_AGO = (0, 0, 0, 0, 0, 30, 200, 400, -120)
"""Seconds before now an assertion was signed: 400 is past its lifetime, -120 ahead of skew."""
ACCEPTED = ("granted", "rejected")


@dataclass
class Tally:
    examples: int = 0
    steps: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)


class DeepProtocol(RuleBasedStateMachine):
    tally = Tally()

    def __init__(self) -> None:
        super().__init__()
        self.tally.examples += 1
        self.world = World()
        self.checks = Checks(self.world)
        self.accepted: list[Sent] = []

    def _fired(self, rule: str, outcome: str) -> None:
        self.tally.steps += 1
        self.tally.rules[rule] += 1
        self.tally.outcomes[f"{rule}:{outcome}"] += 1

    def _running(self) -> list[Run]:
        return [r for r in self.world.runs if r.state.status == "running"]

    def _idle(self) -> list[Run]:
        return [
            r for r in self._running() if not r.state.pending_approvals and not r.state.in_flight
        ]

    def _pending(self) -> list[Run]:
        return [r for r in self._running() if r.state.pending_approvals]

    def _due(self) -> list[Run]:
        now = self.world.now
        return [r for r in self._pending() if _first_expiry(r) <= now]

    def _paying(self) -> list[Run]:
        return [r for r in self._running() if r.state.in_flight]

    def _quiet(self) -> list[Run]:
        return [r for r in self._running() if can_compact(r.state)]

    # ------------------------------------------------------------------ runs and the clock
    @initialize(order=st.sampled_from(ORDERS))
    def first_run(self, order: str) -> None:
        self.world.start(order)

    @precondition(lambda self: len(self.world.runs) < MAX_RUNS and len(self._running()) < 2)
    @rule(order=st.sampled_from(ORDERS))
    def start_a_run(self, order: str) -> None:
        self.world.start(order)
        self._fired("start_a_run", order)

    @precondition(lambda self: bool(self._idle()))
    @rule(pick=PICK, crash_at=CRASH_AT)
    def step(self, pick: int, crash_at: int | None) -> None:
        run = _pick(self._idle(), pick)
        try:
            self._fired("step", self.world.step(run, crash_at))
        except Crash:
            self._fired("step", "crashed")

    @rule(seconds=st.sampled_from([1, 5, 10, 30, 45, 60, TTL_SECONDS, TTL_SECONDS + 1, 400]))
    def tick(self, seconds: int) -> None:
        self.world.now += timedelta(seconds=seconds)
        self._fired("tick", str(seconds))

    @precondition(lambda self: bool(self._due()))
    @rule(pick=PICK, crash_at=CRASH_AT)
    def expire(self, pick: int, crash_at: int | None) -> None:
        try:
            self._fired("expire", self.world.expire(_pick(self._due(), pick), crash_at))
        except Crash:
            self._fired("expire", "crashed")

    @precondition(lambda self: bool(self._paying()))
    @rule(pick=PICK, crash=st.sampled_from(["none", "none", "before", "after"]), crash_at=CRASH_AT)
    def pay(self, pick: int, crash: str, crash_at: int | None) -> None:
        try:
            self._fired("pay", self.world.attempt(_pick(self._paying(), pick), crash, crash_at))
        except Crash:
            self._fired("pay", "crashed recording the receipt")

    @precondition(lambda self: bool(self._quiet()))
    @rule(
        pick=PICK, window=st.sampled_from([None, 1, 2]), crash=st.sampled_from([False, False, True])
    )
    def continue_as_new(self, pick: int, window: int | None, crash: bool) -> None:
        run = _pick(self._quiet(), pick)
        try:
            self._fired(
                "continue_as_new", self.world.continue_as_new(run, window, 0 if crash else None)
            )
        except Crash:
            self._fired("continue_as_new", "crashed")

    @rule(pick=PICK)
    def replay(self, pick: int) -> None:
        """A new worker replays one run's history: it must reach the state the old one had."""
        run = _pick(self.world.runs, pick)
        before = run.state
        self.world.recover(run)
        assert run.state == before, f"{run.run_id}: replay reached another state"
        self._fired("replay", "same state")

    @precondition(lambda self: bool(self._running()))
    @rule()
    def crash_the_worker(self) -> None:
        for run in self.world.runs:
            self.world.recover(run)
        self.world.crashes += 1
        self._fired("crash_the_worker", "recovered")

    # ------------------------------------------------------------------ decisions
    @precondition(lambda self: bool(self._pending()))
    @rule(pick=PICK, who=st.sampled_from(DECIDERS), approve=st.booleans(),
          ago=st.sampled_from(SIGNED_AGO), crash_at=CRASH_AT)  # fmt: skip
    def decide(self, pick: int, who: str, approve: bool, ago: int, crash_at: int | None) -> None:
        run = _pick(self._pending(), pick)
        approval_id, digest = _asked(run)
        token = sign(self.world, ISSUER, who, run.run_id, approval_id, digest=digest,
                     approve=approve, ago=ago)  # fmt: skip
        sent = Sent(run.run_id, token, who, approval_id, digest, approve)
        self._fired("decide", self._send(run, sent, crash_at))

    @precondition(lambda self: bool(self._pending()))
    @rule(pick=PICK, kind=st.sampled_from(FORGERIES), crash_at=CRASH_AT)
    def forge(self, pick: int, kind: str, crash_at: int | None) -> None:
        run = _pick(self._pending(), pick)
        sent = forged(self.world, run, kind, _asked(run))
        outcome = self._send(run, sent, crash_at)
        assert outcome not in ACCEPTED, f"a forgery ({kind}) was {outcome}"
        self._fired("forge", f"{kind}:{outcome}")

    @precondition(lambda self: bool(self._pending()))
    @rule(pick=PICK, first=st.booleans(), second=st.booleans(), crash_at=CRASH_AT)
    def approvers_at_once(self, pick: int, first: bool, second: bool, crash_at: int | None) -> None:
        """Both approvers sign the pending approval; both updates pass the validator on the same
        state, then their handlers run one after the other: only the first may decide."""
        run = _pick(self._pending(), pick)
        approval_id, digest = _asked(run)
        sends = [
            Sent(run.run_id, sign(self.world, ISSUER, who, run.run_id, approval_id,
                                  digest=digest, approve=yes), who, approval_id, digest, yes)
            for who, yes in zip(APPROVERS, (first, second), strict=True)
        ]  # fmt: skip
        assert all(validate(run, approval_id) is None for _ in sends)
        outcomes = [
            self._send(run, s, crash, validated=True)
            for s, crash in zip(sends, (crash_at, None), strict=True)  # the first may crash
        ]
        assert not (outcomes[0] in ACCEPTED and outcomes[1] in ACCEPTED), outcomes
        self._fired("approvers_at_once", "/".join(outcomes))

    @precondition(lambda self: bool(self.accepted))
    @rule(which=st.integers(0, 15), pick=PICK, crash_at=CRASH_AT)
    def resend_a_used_assertion(self, which: int, pick: int, crash_at: int | None) -> None:
        """A decision read from history, sent again: to its own approval, or to what another
        run (or the same run, asking again) now waits on."""
        used = self.accepted[which % len(self.accepted)]
        targets = self._pending() or self.world.runs
        run = _pick(targets, pick)
        approval_id = run.pending() or used.approval_id
        again = Sent(run.run_id, used.token, used.who, approval_id, used.digest, used.approve)
        outcome = self._send(run, again, crash_at)
        assert outcome not in ACCEPTED, f"a used assertion was {outcome} again"
        self._fired("resend_a_used_assertion", outcome)

    def _send(self, run: Run, sent: Sent, crash_at: int | None, *, validated: bool = False) -> str:
        if not validated and (refused := validate(run, sent.approval_id)) is not None:
            return refused
        judged = judge(self.world, run, sent.token, sent.who, sent.approval_id, sent.digest,
                       sent.approve)  # fmt: skip
        try:
            outcome = record_decision(self.world, run, judged, sent.who, sent.approval_id,
                                      sent.digest, sent.approve, crash_at)  # fmt: skip
        except Crash:
            return "crashed"
        if outcome in ACCEPTED:
            self.accepted.append(sent)
        return outcome

    # ------------------------------------------------------------------ invariants
    @invariant()
    def the_protocol_holds(self) -> None:
        self.checks.after_step()

    def teardown(self) -> None:
        self.checks.drive_to_rest()


def _pick(runs: list[Run], pick: int) -> Run:
    return runs[pick % len(runs)]


def _first_expiry(run: Run) -> datetime:
    return min(p.expires_at for p in run.state.pending_approvals.values())


def _asked(run: Run) -> tuple[str, str]:
    approval_id = run.pending()
    assert approval_id is not None
    return approval_id, run.state.pending_approvals[approval_id].proposal_digest


@dataclass(frozen=True)
class Explored:
    examples: int
    steps: int
    rules: dict[str, int]
    outcomes: dict[str, int]
    violation: str | None


def explore(
    examples: int, steps: int, *, derandomize: bool = False, shrink: bool = True
) -> Explored:
    """Run the machine; a broken invariant is reported (hypothesis's shrunk example, unless
    ``shrink`` is off), not raised. ``derandomize``: the same examples every time."""
    DeepProtocol.tally = Tally()
    explored = settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
        suppress_health_check=list(HealthCheck), derandomize=derandomize,
        phases=list(Phase) if shrink else [Phase.generate],
    )  # fmt: skip
    violation = None
    try:
        run_state_machine_as_test(DeepProtocol, settings=explored)
    except Exception as exc:  # any failure is the violation to report
        notes = "\n".join(getattr(exc, "__notes__", []))
        violation = f"{type(exc).__name__}: {exc}\n{notes}"
    tally = DeepProtocol.tally
    return Explored(tally.examples, tally.steps, dict(tally.rules), dict(tally.outcomes), violation)
