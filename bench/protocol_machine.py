"""The run protocol explored by a state machine against the real server and a real worker process.

Hypothesis chooses the interleaving: refund runs for two late orders of each example's own (several
runs may claim the same order; some with an approval that expires after two seconds), decisions
signed by the approver or by people who may not decide (the requester, an agent without the
role, a stranger unknown to the directory), approvals sent twice at once, raw updates without a
signature or bound to another proposal, the worker process SIGKILLed and restarted by its
supervisor, and the Temporal server SIGKILLed and restarted on its data, at any point. After every
step:

- each order is refunded at most once across runs, and only by a run whose approval was granted;
- every grant is bound to the proposal digest its request showed, and signed by the approver;
- in conversations that continue as new after almost every turn, replies sent at once by the
  customer or by a stranger: none lost, none taken twice, none refused yet recorded, none of a
  stranger's taken (checked at rest);
- no run's ledger holds an event twice, out of order or after a hole, at any step (an append
  that would leave a hole is refused, and every append carries the events not yet confirmed).

When the example ends, each run is driven to rest and its ledger must project to exactly the
state Temporal's history records (``agentledger verify``'s check).

``explore`` runs the machine on a stack of its own: the test
(``tests/workflows/test_protocol_state_machine.py``) with few, short examples for CI's budget,
``python -m bench.faults`` with more (``state_machine_examples``, ``state_machine_violations``).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from agentledger.activities.ledger import Ledger
from agentledger.app import runs as client_ops
from agentledger.app.devserver import DevServer, stop_dev_server
from agentledger.app.errors import AgentLedgerError
from agentledger.app.history import recorded_state
from agentledger.app.identity import Issuer
from agentledger.app.registry import get_pack, register_pack
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support import PACK as SUPPORT
from agentledger.packs.support import records
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision
from bench._chat_pack import CHAT_CAN
from bench._chat_pack import CUSTOMER as CHAT_CUSTOMER
from bench._chat_pack import STRANGER as CHAT_STRANGER
from bench._stack import open_stack, start_dev_server
from bench.crash import outages
from bench.crash.crashkit import CrashSite, WorkerProcess
from bench.crash.fault_pack import ORDERS, crash_order, request_for
from bench.crash.fault_pack import seed as seed_orders

T = TypeVar("T")


def _short_ttl_order(request: str, principal: Principal) -> WorkOrder:
    return SUPPORT.make_work_order(request, principal).model_copy(update={"pack": SHORT_TTL.name})


SHORT_TTL: Pack = replace(
    SUPPORT,
    name="support_short_ttl",
    profile=SUPPORT.profile.model_copy(update={"approval_ttl_seconds": 2}),
    make_work_order=_short_ttl_order,
)
"""The support pack whose approvals expire after two seconds."""

ORDERS_PER_EXAMPLE = 2  # fresh late orders of usr_73's for each example (bench.crash.fault_pack)
MAX_KILLS_PER_EXAMPLE = 2
MAX_SERVER_RESTARTS_PER_EXAMPLE = 1  # each costs the server's start-up
# Both caps count per example: a precondition that read a count kept across examples would
# change when hypothesis replays a failing example, hiding the failure behind a flaky strategy.
SHORT_TTL_PACK = f"{SHORT_TTL.name}={__name__}:SHORT_TTL"
CHAT_PACK = f"{CHAT_CAN.name}=bench._chat_pack:CHAT_CAN"
REPLIERS = (CHAT_CUSTOMER.user_id, CHAT_CUSTOMER.user_id, CHAT_STRANGER.user_id)
DECIDERS = ("ops_lead_1", "ops_lead_1", "usr_73", "agent_2", "mallory")  # the approver twice


class ShortTtlSite(CrashSite):
    """The crash site, whose workers also host the support pack with a two-second approval and
    the conversational pack that continues as new after almost every turn."""

    def worker_env(
        self, point: str | None, barrier: int = 1, action: str = "kill"
    ) -> dict[str, str]:
        env = super().worker_env(point, barrier, action)
        packs = f"{env['AGENTLEDGER_PACKS']},{SHORT_TTL_PACK},{CHAT_PACK}"
        return {**env, "AGENTLEDGER_PACKS": packs}


class World:
    """What the machine drives: one worker process, its own Temporal server, a client, the
    ledger and the issuer."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        site: CrashSite,
        server: DevServer,
        client: Client,
        ledger: Ledger,
    ) -> None:
        self.loop, self.site, self.client, self.ledger = loop, site, client, ledger
        self.server = server
        self.issuer = Issuer.local(site.work_dir)
        self.worker = WorkerProcess(site)
        self.server_restarts = 0
        self.kills = 0
        self.orders_taken = 0
        self.runs: list[str] = []
        """Every run any example started: the system of record is shared by all of them."""

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the test's event loop (the worker's supervisor lives there)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=180)


class Protocol(RuleBasedStateMachine):
    world: World
    examples = 0
    runs = Bundle("runs")
    chats = Bundle("chats")

    def __init__(self) -> None:
        super().__init__()
        Protocol.examples += 1
        self.started: list[str] = []
        self.kills = 0
        self.restarts = 0
        self.replies: dict[str, Replies] = {}
        self.first_order = self.world.orders_taken
        self.world.orders_taken += ORDERS_PER_EXAMPLE

    # ------------------------------------------------------------------ rules
    @initialize(target=runs, which=st.integers(0, ORDERS_PER_EXAMPLE - 1))
    def first_refund(self, which: int) -> str:
        return self.start_a_refund(which)

    @rule(
        target=runs,
        which=st.integers(0, ORDERS_PER_EXAMPLE - 1),
        pack=st.sampled_from(["support", "support", SHORT_TTL.name]),
    )
    def start_a_refund(self, which: int, pack: str = "support") -> str:
        order_id = crash_order((self.first_order + which) % ORDERS)
        run_id = self.world.call(self._start(order_id, pack))
        self.started.append(run_id)
        self.world.runs.append(run_id)
        return run_id

    @rule(target=chats)
    def start_a_conversation(self) -> str:
        """A conversation that continues as new after almost every turn (``chat_can``)."""
        order = get_pack(CHAT_CAN.name).make_work_order("I'd like to pick a colour", CHAT_CUSTOMER)
        run_id = self.world.call(self._started(order))
        self.started.append(run_id)
        self.world.runs.append(run_id)
        self.replies[run_id] = Replies()
        return run_id

    @rule(
        chat=chats,
        who=st.sampled_from(REPLIERS),
        colour=st.sampled_from(["red", "green", "blue", "mauve"]),
        at_once=st.integers(1, 3),
    )
    def reply(self, chat: str, who: str, colour: str, at_once: int) -> None:
        """Messages sent at once by the customer (taken, or refused to them) or a stranger
        (always refused); a server restart may leave whether one was taken unknown."""
        replies = self.replies[chat]
        texts = [f"{colour} #{replies.sent + n}" for n in range(at_once)]
        replies.sent += at_once

        async def send() -> list[str]:
            return await asyncio.gather(*(self._reply(chat, who, text) for text in texts))

        for text, outcome in zip(texts, self.world.call(send()), strict=True):
            getattr(replies, outcome).append(text)
        if who != CHAT_CUSTOMER.user_id:
            replies.strangers += texts
            assert not set(texts) & set(replies.taken), f"a stranger's message was taken: {texts}"

    @rule(run_id=runs, who=st.sampled_from(DECIDERS), approve=st.booleans())
    def decide(self, run_id: str, who: str, approve: bool) -> None:
        self.world.call(self._signed(run_id, who, approve))

    @rule(run_id=runs)
    def approve_twice_at_once(self, run_id: str) -> None:
        async def twice() -> None:
            await asyncio.gather(
                self._signed(run_id, "ops_lead_1", True), self._signed(run_id, "ops_lead_1", True)
            )

        self.world.call(twice())

    @rule(run_id=runs, signed=st.booleans())
    def send_a_raw_forgery(self, run_id: str, signed: bool) -> None:
        """Unsigned as the approver, or signed by them for another proposal (a stale digest)."""
        self.world.call(self._forged(run_id, signed))

    @precondition(lambda self: self.restarts < MAX_SERVER_RESTARTS_PER_EXAMPLE)
    @rule()
    def restart_the_server(self) -> None:
        """SIGKILL the Temporal server and start it again on its data, as an outage would."""
        world = self.world
        data_dir = world.site.work_dir / "temporal"
        world.server = world.call(outages.crash_and_restart_server(world.server, data_dir))
        world.server_restarts += 1
        self.restarts += 1

    @precondition(lambda self: self.kills < MAX_KILLS_PER_EXAMPLE)
    @rule()
    def kill_the_worker(self) -> None:
        self.world.worker.kill()  # its supervisor starts another
        self.world.kills += 1
        self.kills += 1

    # ------------------------------------------------------------------ invariants
    @invariant()
    def each_order_is_refunded_at_most_once_and_only_after_a_grant(self) -> None:
        """Checked against the system of record itself. A refund's receipt reaches the ledger
        with the run's next activity, but its authorisation (and the grant before it) is
        appended by the very activity that pays, before it pays."""
        with self.world.ledger.engine.connect() as db:
            rows = db.execute(
                select(records.refunds.c.order_id, records.refunds.c.idempotency_key)
            ).all()
        orders = [order for order, _ in rows]
        assert len(orders) == len(set(orders)), rows
        authorised = self._authorised_after_a_grant()
        for order, key in rows:
            assert key in authorised, f"{order} refunded under {key}, which no grant authorised"

    def _authorised_after_a_grant(self) -> set[str]:
        keys = set()
        for run_id in self.world.runs:
            events = self.world.ledger.read(run_id)
            granted = [e.seq for e in events if isinstance(e, ev.ApprovalGranted)]
            keys |= {
                e.idempotency_key
                for e in events
                if isinstance(e, ev.ToolCallAuthorised)
                and e.tool == "create_refund"
                and e.idempotency_key is not None
                and granted
                and granted[0] < e.seq
            }
        return keys

    @invariant()
    def every_grant_is_the_approvers_and_bound_to_its_request(self) -> None:
        for run_id in self.started:
            _grants_bound(_prefix(self.world.ledger.read(run_id)))

    @invariant()
    def every_ledger_is_contiguous(self) -> None:
        """At every step, not only at rest: a batch cut off by a killed worker is carried again
        by the run's next append, and the ledger refuses one that would leave a hole."""
        for run_id in self.started:
            seqs = [e.seq for e in self.world.ledger.read(run_id)]
            assert seqs == list(range(1, len(seqs) + 1)), (run_id, seqs)

    def teardown(self) -> None:
        for run_id in self.started:
            self.world.call(self._matches_history(run_id))
            events = self.world.ledger.read(run_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), run_id
            _grants_bound(events)
            if run_id in self.replies:
                _no_reply_lost_or_invented(self.replies[run_id], events)

    # ------------------------------------------------------------------ the moves
    async def _start(self, order_id: str, pack: str) -> str:
        principal = self.world.ledger.get_principal("usr_73")
        assert principal is not None
        return await self._started(get_pack(pack).make_work_order(request_for(order_id), principal))

    async def _started(self, order: WorkOrder) -> str:
        run_id = f"run_{uuid.uuid4().hex[:12]}"
        for _ in range(300):  # the server may be restarting; the id makes a resend harmless
            try:
                await client_ops.start_run(
                    self.world.client,
                    self.world.site.task_queue,
                    order,
                    run_id=run_id,
                    issuer=self.world.site.issuer,
                )
                break
            except WorkflowAlreadyStartedError:
                break  # an earlier attempt started it and its answer was lost
            except RPCError:
                await asyncio.sleep(0.2)
        await _settled(self.world.client, run_id)
        return run_id

    async def _reply(self, run_id: str, who: str, text: str) -> str:
        """``taken``, ``refused``, or ``unknown`` when no answer came back."""
        try:
            await client_ops.reply(self.world.client, run_id, who, text, issuer=self.world.issuer)
        except AgentLedgerError:
            return "refused"  # Refused, or the run ended or was never found
        except (RPCError, WorkflowUpdateFailedError):
            return "unknown"
        return "taken"

    async def _signed(self, run_id: str, who: str, approve: bool) -> None:
        pending = await _pending(self.world.client, run_id)
        if pending is None:
            return
        with contextlib.suppress(AgentLedgerError, RPCError):  # refusals are recorded
            await client_ops.decide(
                self.world.client, run_id, pending, who, issuer=self.world.issuer, approve=approve
            )

    async def _forged(self, run_id: str, signed: bool) -> None:
        pending = await _pending(self.world.client, run_id)
        if pending is None:
            return
        stale = "0" * 64
        assertion = self.world.issuer.approval_assertion(
            "ops_lead_1", run_id=run_id, approval_id=pending, digest=stale, approve=True
        )
        decision = ApprovalDecision(
            approval_id=pending,
            approver_id="ops_lead_1",
            approve=True,
            proposal_digest=stale,
            assertion=assertion if signed else "",
        )
        handle = self.world.client.get_workflow_handle(run_id)
        with contextlib.suppress(WorkflowUpdateFailedError, RPCError):
            await handle.execute_update(AgentRunWorkflow.decide_approval, decision)

    async def _matches_history(self, run_id: str) -> None:
        """Once the run rests (ended, or parked with its events flushed), the ledger projects to
        exactly what Temporal's history records."""
        for _ in range(400):
            await _settled(self.world.client, run_id)
            recorded = await recorded_state(self.world.client, run_id)
            stored = project(self.world.ledger.read(run_id))
            if stored.last_seq == recorded.last_seq:
                assert stored.model_dump(mode="json") == recorded.model_dump(mode="json")
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the ledger of {run_id} never caught up with its history")


@dataclass
class Replies:
    """What one conversation was sent, by how the sender heard back."""

    sent: int = 0
    taken: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    strangers: list[str] = field(default_factory=list)
    """Sent by someone other than the requester: never the run's to take."""


def _no_reply_lost_or_invented(replies: Replies, events: list[ev.RunEvent]) -> None:
    """Across continue-as-new, worker kills and server restarts: every message the customer was
    told was taken is in the ledger exactly once; none refused to its sender is, nor any of a
    stranger's; nothing there was never sent."""
    said = [e.text for e in events if isinstance(e, ev.UserReplied)]
    assert len(said) == len(set(said)), said
    assert set(replies.taken) <= set(said), (replies.taken, said)
    assert not set(replies.refused) & set(said), (replies.refused, said)
    assert set(said) <= set(replies.taken) | set(replies.unknown), said
    assert not set(replies.strangers) & set(said), (replies.strangers, said)


def _prefix(events: list[ev.RunEvent]) -> list[ev.RunEvent]:
    """The events before the first gap: what has certainly been appended in order."""
    for index, event in enumerate(events):
        if event.seq != index + 1:
            return events[:index]
    return events


def _grants_bound(events: list[ev.RunEvent]) -> None:
    """Every grant is the approver's, signed, and bound to the digest its request showed."""
    asked = {e.approval_id: e for e in events if isinstance(e, ev.ApprovalRequested)}
    for granted in (e for e in events if isinstance(e, ev.ApprovalGranted)):
        assert granted.approval_id in asked, f"{granted.approval_id} granted, never requested"
        assert granted.proposal_digest == asked[granted.approval_id].proposal_digest
        assert granted.assertion is not None
        assert granted.assertion.subject == "ops_lead_1"


async def _settled(client: Client, run_id: str) -> None:
    """Until the run ends or waits on a person (queries retried while a worker restarts)."""
    for _ in range(600):
        with contextlib.suppress(RPCError, AgentLedgerError, TimeoutError):
            await client_ops.wait_for(client, run_id, pending_approval=True, timeout=30)
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{run_id} never settled")


async def _pending(client: Client, run_id: str) -> str | None:
    await _settled(client, run_id)
    state = await _retrying(lambda: client_ops.live_state(client, run_id))
    return next(iter(state.pending_approvals), None)


async def _retrying(call: Any) -> Any:
    for _ in range(300):
        try:
            result: Awaitable[Any] = call()
            return await result
        except (RPCError, AgentLedgerError):
            await asyncio.sleep(0.2)
    raise AssertionError("the worker never answered")


@dataclass(frozen=True)
class Exploration:
    """What the machine did: examples run, and what they drove the runs through."""

    examples: int
    runs: int
    decisions: int
    expired: int
    replies: int
    compactions: int
    worker_kills: int
    server_restarts: int

    def line(self) -> str:
        return (
            f"state machine: {self.examples} examples, {self.runs} runs, {self.decisions} "
            f"decisions, {self.expired} expired, {self.replies} replies taken, "
            f"{self.compactions} compactions, {self.worker_kills} worker kills, "
            f"{self.server_restarts} server restarts"
        )


async def explore(work_dir: Path, database_url: str, *, examples: int, steps: int) -> Exploration:
    """Run the machine on a stack of its own (a server the machine restarts, a worker process);
    a violated invariant raises hypothesis's shrunk counterexample."""
    assert examples * ORDERS_PER_EXAMPLE <= ORDERS, "not enough late orders seeded"
    server = start_dev_server(work_dir / "temporal")
    register_pack(SHORT_TTL.name, SHORT_TTL_PACK.split("=", 1)[1])
    queue = f"sm-{uuid.uuid4().hex[:8]}"
    site = ShortTtlSite(server.address, database_url, queue, work_dir)
    stack = await open_stack(work_dir, server.address, database_url, queue)
    runtime, client = stack.runtime, stack.client
    seed_orders(runtime.ledger.engine)
    world = World(asyncio.get_running_loop(), site, server, client, runtime.ledger)
    Protocol.world = world
    Protocol.examples = 0
    explored = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    try:
        async with world.worker:
            await asyncio.to_thread(run_state_machine_as_test, Protocol, settings=explored)
        events = [e for run_id in world.runs for e in runtime.ledger.read(run_id)]
    finally:
        stop_dev_server(work_dir / "temporal")
        runtime.ledger.engine.dispose()
    decided = ev.ApprovalGranted | ev.ApprovalRejected | ev.ApprovalAttemptRefused
    return Exploration(
        examples=Protocol.examples,
        runs=len(world.runs),
        decisions=sum(isinstance(e, decided) for e in events),
        expired=sum(isinstance(e, ev.ApprovalExpired) for e in events),
        replies=sum(isinstance(e, ev.UserReplied) for e in events),
        compactions=sum(isinstance(e, ev.HistoryCompacted) for e in events),
        worker_kills=world.kills,
        server_restarts=world.server_restarts,
    )
