"""Forking a run at one of its events: a new run starts from the original's exact state there
(its first state's hash is the original's at that seq), its origin is frozen in its manifest,
and a dry fork acts on nothing. Bad fork points, operators without the ``forker`` role and
forged fork inputs are refused with a typed error, and where a fork run exists, recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from agentledger.activities.leftovers import LeftoverActivities
from agentledger.activities.messages import HousekeepingInput
from agentledger.activities.sandboxes import Sandboxes, _files, _schemas
from agentledger.app import forks
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.fold import project, state_hash
from agentledger.domain.forks import ForkOrigin, boundaries, origin_hash
from agentledger.packs.support import records
from agentledger.workflows import RunInput
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal
ON_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
"""Identity and fork points, not storage: one backend. Sandboxes are storage: both."""


async def parked(harness: Harness) -> tuple[str, list[ev.RunEvent]]:
    """A support run parked on its refund's approval, and its events so far."""
    run_id = await harness.start(REQUEST)
    await harness.in_inbox(run_id)
    return run_id, harness.runtime.ledger.read(run_id)


def last_boundary(events: list[ev.RunEvent]) -> int:
    """The last seq before the refund was proposed where a fork may start."""
    proposed = next(e.seq for e in events if isinstance(e, ev.ApprovalRequested))
    return max(seq for seq in boundaries(events) if seq < proposed)


async def fork(
    harness: Harness, run_id: str, seq: int, who: str = "ops_lead_1", *, dry: bool = True
) -> str:
    plan = forks.plan_fork(harness.runtime.ledger, run_id, seq, who, dry=dry)
    started = await forks.start_fork(
        harness.client, harness.settings.task_queue, plan, issuer=harness.issuer
    )
    await forks.forked(harness.runtime.ledger, started)
    return started


def manifest_origin(harness: Harness, forked: ev.RunForked) -> ForkOrigin:
    manifest = harness.runtime.ledger.get_manifest(forked.manifest_hash)
    assert manifest is not None and manifest.fork_origin is not None
    return manifest.fork_origin


def refunds_of(harness: Harness, order_id: str, engine: Engine | None = None) -> list[Any]:
    with (engine or harness.runtime.ledger.engine).connect() as conn:
        query = select(records.refunds).where(records.refunds.c.order_id == order_id)
        return list(conn.execute(query))


@ON_SQLITE
async def test_a_dry_fork_starts_from_the_exact_state_and_acts_on_nothing(
    harness: Harness,
) -> None:
    run_id, events = await parked(harness)
    seq = last_boundary(events)
    original = project(e for e in events if e.seq <= seq)

    fork_id = await fork(harness, run_id, seq)
    started, forked = harness.runtime.ledger.read(fork_id)[:2]
    assert isinstance(started, ev.RunStarted) and isinstance(forked, ev.RunForked)
    assert (forked.origin_run_id, forked.origin_seq, forked.dry) == (run_id, seq, True)
    assert forked.facts_hash == state_hash(original)
    first = project((started, forked))
    assert first.run_id == fork_id
    assert origin_hash(first, manifest_origin(harness, forked)) == state_hash(original)
    assert forked.assertion is not None and forked.assertion.subject == "ops_lead_1"
    manifest = harness.runtime.ledger.get_manifest(forked.manifest_hash)
    assert manifest is not None and manifest.fork_origin == ForkOrigin(
        run_id=run_id, seq=seq, state_hash=forked.facts_hash, operator_id="ops_lead_1"
    )

    fork_events = await harness.finish(fork_id)
    denied = [e for e in fork_events if isinstance(e, ev.ToolCallDenied)]
    assert [e.reason_code for e in denied] == ["fork_dry"], [e.kind for e in fork_events]
    assert not any(isinstance(e, ev.ApprovalRequested) for e in fork_events)
    assert refunds_of(harness, "ord_4821") == []
    assert project(harness.runtime.ledger.read(run_id)).status == "running"  # untouched


async def test_a_fork_that_is_not_dry_refunds_in_its_sandbox_never_in_production(
    harness: Harness,
) -> None:
    run_id, events = await parked(harness)
    fork_id = await fork(harness, run_id, last_boundary(events), dry=False)
    (approval,) = await harness.in_inbox(fork_id)
    await harness.decide(fork_id, approval.approval_id, "ops_lead_1")
    fork_events = await harness.finish(fork_id)
    (receipt,) = [e for e in fork_events if isinstance(e, ev.ToolReceiptRecorded)
                  and e.receipt.tool == "create_refund"]  # fmt: skip
    assert receipt.receipt.status == "succeeded", receipt.receipt.error_message
    assert refunds_of(harness, "ord_4821") == []  # production: untouched
    sandbox = Sandboxes(harness.runtime.ledger.engine).engine(fork_id, get_pack("support"))
    (refund,) = refunds_of(harness, "ord_4821", sandbox)
    assert refund.refund_id == receipt.receipt.receipt_id
    # The original goes on, against production, as if no fork had run.
    await harness.decide(run_id, next(iter(project(events).pending_approvals)), "ops_lead_1")
    await harness.finish(run_id)
    (original,) = refunds_of(harness, "ord_4821")
    assert original.refund_id != refund.refund_id
    _housekeeping_drops_the_ended_forks_sandbox(harness, fork_id)


def _housekeeping_drops_the_ended_forks_sandbox(harness: Harness, fork_id: str) -> None:
    """Kept a day, then dropped with the fork's answer streams; a live fork's stays."""
    ledger, pack = harness.runtime.ledger, get_pack("support")
    live = "run_still_forking"
    Sandboxes(ledger.engine).engine(live, pack)  # a fork whose run has not ended (no run row)
    leftovers = LeftoverActivities(ledger, timedelta(hours=24))
    now = datetime.now(UTC)
    kept = leftovers.prune_ended_runs(HousekeepingInput(now=now))
    assert (kept.sandboxes, len(_sandboxes(ledger.engine))) == (0, 2)
    assert ledger.streams(fork_id)  # its answer, still to be reread
    pruned = leftovers.prune_ended_runs(HousekeepingInput(now=now + timedelta(hours=25)))
    assert pruned.sandboxes == 1 and pruned.answer_streams >= 1
    assert [run for _, run in _sandboxes(ledger.engine)] == [live]
    assert ledger.streams(fork_id) == []
    assert refunds_of(harness, "ord_4821") != []  # production's records untouched


def _sandboxes(engine: Engine) -> list[tuple[object, str | None]]:
    return list(_schemas(engine) if engine.dialect.name == "postgresql" else _files(engine))


@ON_SQLITE
async def test_bad_fork_points_are_refused_before_any_run_starts(harness: Harness) -> None:
    run_id, events = await parked(harness)
    proposed = next(e.seq for e in events if isinstance(e, ev.ApprovalRequested))
    cases = {events[-1].seq + 5: "fork_point_unknown", proposed: "fork_point_mid_operation"}
    for seq, code in cases.items():
        with pytest.raises(Refused) as refused:
            forks.plan_fork(harness.runtime.ledger, run_id, seq, "ops_lead_1", dry=True)
        assert refused.value.reason_code == code


@ON_SQLITE
async def test_an_operator_without_the_forker_role_is_refused_and_recorded(
    harness: Harness,
) -> None:
    run_id, events = await parked(harness)
    with pytest.raises(Refused) as refused:
        await fork(harness, run_id, last_boundary(events), who="fin_lead_1")
    assert refused.value.reason_code == "missing_role"


@ON_SQLITE
async def test_forged_fork_inputs_are_refused_by_the_run(harness: Harness) -> None:
    """Anyone who reaches Temporal can start a fork's input: the run checks it all again."""
    run_id, events = await parked(harness)
    seq = last_boundary(events)
    plan = forks.plan_fork(harness.runtime.ledger, run_id, seq, "ops_lead_1", dry=True)
    other = plan.origin.model_copy(update={"state_hash": "sha256:" + "0" * 64})
    mid = plan.origin.model_copy(
        update={"seq": next(e.seq for e in events if isinstance(e, ev.ApprovalRequested))}
    )
    wider = plan.work_order.model_copy(update={"request_text": "Refund ord_4821 twice."})
    signed = [(other, plan.work_order, "fork_state_mismatch")]
    signed += [(mid, plan.work_order, "fork_point_mid_operation")]
    signed += [(plan.origin, wider, "preparation_failed")]  # not the original's work order
    # Another pack is not a configuration of the original's (an eval's overlay, ``support+x``).
    billing = plan.work_order.model_copy(update={"pack": "billing"})
    signed += [(plan.origin, billing, "preparation_failed")]
    for n, (origin, order, code) in enumerate(signed):
        forged = forks.ForkPlan(f"{plan.run_id}-{n}-{code}", origin, order)
        with pytest.raises(Refused) as refused:
            await forks.forked(
                harness.runtime.ledger,
                await forks.start_fork(
                    harness.client, harness.settings.task_queue, forged, issuer=harness.issuer
                ),
            )
        assert refused.value.reason_code == code, refused.value
    unsigned = RunInput(run_id=f"{plan.run_id}-unsigned", work_order=plan.work_order,
                        fork=plan.origin)  # fmt: skip
    await harness.client.start_workflow(
        "AgentRun", unsigned, id=unsigned.run_id, task_queue=harness.settings.task_queue
    )
    with pytest.raises(Refused) as refused:
        await forks.forked(harness.runtime.ledger, unsigned.run_id)
    assert refused.value.reason_code == "assertion_missing", refused.value
