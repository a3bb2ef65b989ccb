"""Run a suite's work orders under two configurations, through the real runtime.

The eval gets a ledger of its own (``<data dir>/evals/<eval id>/ledger.db``): every run it
starts is recorded there, and the support pack's system of record there is reset before each
work order, which is only safe on a database nobody else uses. Runs go through the configured
Temporal server (the embedded dev server by default) on a task queue of the eval's own, served
by a worker in this process that also serves the two configurations' overlay packs. Approvals
are decided as the suite's approver would, signed by the eval directory's issuer, over the same
update a person's decision takes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine
from temporalio.client import Client

from agentledger.activities.sandboxes import Sandboxes
from agentledger.app import runs as run_ops
from agentledger.app.config import Settings
from agentledger.app.errors import EvalInputInvalid, Refused
from agentledger.app.forks import plan_fork, start_fork
from agentledger.app.identity import Issuer
from agentledger.app.payloads import KeyRing, ring_path
from agentledger.app.runtime import Runtime
from agentledger.domain.evaluation import EvalCase, figures_of, problems
from agentledger.domain.evaluation.suite import ForkedFrom
from agentledger.domain.state import ENDED
from agentledger.domain.workorder import WorkOrder
from agentledger.evaluation.configs import Configuration
from agentledger.evaluation.regressions import import_origin
from agentledger.evaluation.report import RunRow
from agentledger.evaluation.sources import SuiteSource

__all__ = [
    "EvalStack",
    "drive",
    "eval_settings",
    "open_eval_stack",
    "run_case",
    "run_pairs",
    "settle",
]


def eval_settings(settings: Settings, eval_id: str) -> Settings:
    """The eval's own ledger and task queue on the configured Temporal server (one queue for
    every kind of work: the eval's worker serves them all), sealed with the parent's key ring
    (so ``agentledger show --database-url <the eval's ledger>`` reads its runs)."""
    security = settings.temporal_security
    if security.payload_codec and security.payload_keys is None:
        KeyRing.local(settings.data_dir)  # the parent's ring, made if new, seals the eval too
        security = replace(security, payload_keys=ring_path(settings))
    return replace(
        settings,
        temporal_security=security,
        data_dir=settings.data_dir / "evals" / eval_id,
        temporal_address=settings.address,  # the parent directory's server, knowingly
        database_url=None,
        task_queue=f"eval-{eval_id}",
        model_queue=None,
        tool_queue=None,
    )


@dataclass
class EvalStack:
    runtime: Runtime
    client: Client
    issuer: Issuer

    @property
    def queue(self) -> str:
        return self.runtime.settings.task_queue


async def run_case(
    stack: EvalStack, source: SuiteSource, case: EvalCase, config: Configuration, repeat: int
) -> RunRow:
    """One work order under one configuration on a fresh copy of the system of record."""
    ledger = stack.runtime.ledger
    source.fresh_copy(ledger.engine, case)
    nonce = uuid.uuid4().hex[:8]
    run_id = f"eval-{config.name}-{case.case_id}-{repeat}-{nonce}"
    started = time.perf_counter()
    order, engine = await _run(stack, source, case, config, run_id, nonce)
    wall = time.perf_counter() - started
    events = ledger.read(run_id)
    f = figures_of(events)
    end_state = source.end_state(engine, order)
    cost = config.config.pricing.cost(f.input_tokens, f.output_tokens)
    f = f.model_copy(update={"wall_seconds": wall, "end_state_hash": end_state, "cost": cost})
    found = (*problems(case.expect, f), *source.extra_problems(ledger.engine, order, events))
    return RunRow(
        configuration=config.name, case_id=case.case_id, repeat=repeat, figures=f, problems=found
    )


async def _run(
    stack: EvalStack,
    source: SuiteSource,
    case: EvalCase,
    config: Configuration,
    run_id: str,
    nonce: str,
) -> tuple[WorkOrder, Engine]:
    """Run the case to its end: its work order, and the engine its writes went to."""
    ledger = stack.runtime.ledger
    if case.fork is None:
        order = source.work_order(case, config.pack, ledger, nonce)
        order = order.model_copy(update={"pack": config.pack.name})
        await drive(stack, order, run_id, approver=source.approver(order), approve=case.approve)
        return order, ledger.engine
    # A regression case: a fork of its recorded origin, writing to its own sandbox.
    operator = source.suite.approver
    order = await start_forked_case(stack, case.fork, config.pack.name, run_id, operator)
    await settle(stack, run_id, approver=source.approver(order), approve=case.approve)
    return order, Sandboxes(ledger.engine).engine(run_id, config.pack)


async def drive(
    stack: EvalStack, order: WorkOrder, run_id: str, *, approver: str, approve: bool
) -> None:
    """Start the run and see it to its end, deciding each approval it asks for."""
    await run_ops.start_run(stack.client, stack.queue, order, run_id=run_id, issuer=stack.issuer)
    await settle(stack, run_id, approver=approver, approve=approve)


async def start_forked_case(
    stack: EvalStack, origin: ForkedFrom, pack: str, run_id: str, operator: str
) -> WorkOrder:
    """Start ``run_id``, the fork of a regression case's origin under the configuration's
    ``pack``, signed by the suite's approver; its work order."""
    import_origin(stack.runtime.ledger, origin)
    try:
        plan = plan_fork(stack.runtime.ledger, origin.run_id, origin.seq, operator, dry=False)
    except Refused as exc:
        raise EvalInputInvalid(f"the case's fork: {exc}", "fork_refused") from None
    order = plan.work_order.model_copy(update={"pack": pack})
    await start_fork(
        stack.client, stack.queue, replace(plan, run_id=run_id, work_order=order),
        issuer=stack.issuer,
    )  # fmt: skip
    return order


async def settle(stack: EvalStack, run_id: str, *, approver: str, approve: bool) -> None:
    """See the run to its end, deciding each approval it asks for."""
    handle = stack.client.get_workflow_handle(run_id)
    while True:
        state = await run_ops.wait_for(stack.client, run_id, pending_approval=True, timeout=600)
        if state.status in ENDED or state.awaiting is not None:
            break
        for pending in list(state.pending_approvals.values()):
            await run_ops.decide(
                stack.client,
                run_id,
                pending.approval_id,
                approver,
                issuer=stack.issuer,
                approve=approve,
                reason="" if approve else "the eval case rejects this proposal",
            )
    if state.awaiting is None:
        await handle.result()


async def run_pairs(
    stack: EvalStack,
    source: SuiteSource,
    configs: tuple[Configuration, Configuration],
    repeat: int,
    on_row: Callable[[RunRow], None] = lambda row: None,
) -> list[RunRow]:
    """Every case under both configurations, ``repeat`` times; the order of the two flips on
    each repeat so neither always runs on a warmer worker."""
    rows = []
    for k in range(repeat):
        for case in source.suite.cases:
            for config in configs if k % 2 == 0 else configs[::-1]:
                row = await run_case(stack, source, case, config, k)
                on_row(row)
                rows.append(row)
    return rows


def open_eval_stack(settings: Settings, configs: tuple[Configuration, ...]) -> Runtime:
    """The eval's runtime: its own seeded ledger, and the configurations' overlay packs."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    runtime = Runtime.open(settings)
    runtime.seed()
    runtime.overlays.update({c.pack.name: c.pack for c in configs})
    return runtime
