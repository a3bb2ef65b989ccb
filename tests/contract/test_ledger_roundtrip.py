"""Serialise → store → load → project gives the same state on every backend."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentledger.activities.ledger import Ledger
from agentledger.domain.events import HistoryCompacted, RunEvent
from agentledger.domain.fold import project, state_hash
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import VerifiedFact
from bench.factories import RunScript
from tests.strategies import runs

_run_ids = itertools.count()

ROUND_TRIP = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@ROUND_TRIP
@given(st.data())
def test_a_stored_run_loads_and_projects_to_the_same_state(
    ledger: Ledger, data: st.DataObject
) -> None:
    run_id = f"run-{next(_run_ids)}"  # one ledger serves every example: keep runs apart
    events = data.draw(runs(run_id=run_id), label="events")
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events)), max_size=3), label="batches"))
    for start, end in itertools.pairwise([0, *cuts, len(events)]):
        ledger.append(events[start:end])

    loaded = ledger.read(run_id)

    assert loaded == events
    assert [e.model_dump_json() for e in loaded] == [e.model_dump_json() for e in events]
    state = project(loaded)
    assert state == project(events)
    assert state_hash(state) == state_hash(project(events))
    _assert_read_models_match(ledger, state)


def _assert_read_models_match(ledger: Ledger, state: WorkingState) -> None:
    run = ledger.get_run(state.run_id)
    assert run is not None and run.last_seq == state.last_seq
    expected = (
        state.status
        if state.status != "running"
        else ("awaiting_approval" if state.pending_approvals else "running")
    )
    assert run.status == expected
    pending = {a.approval_id for a in ledger.approvals("pending", run_id=state.run_id)}
    assert pending == set(state.pending_approvals)
    decided = {
        a.approval_id: a.status
        for a in ledger.approvals(None, run_id=state.run_id)
        if a.status != "pending"
    }
    assert decided == {k: v.decision for k, v in state.approvals.items()}
    receipts = {r.operation_id: r.status for r in ledger.receipts(state.run_id)}
    settled = {a.operation_id: a.status for a in state.completed_actions}
    assert {op: s for op, s in receipts.items() if s != "in_doubt"} == settled


def _with_fact(run_id: str, value: float | int) -> list[RunEvent]:
    script = RunScript(run_id)
    script.started()
    script.authorise("op_1", "get_order", {"order_id": "ord_1"})
    fact = VerifiedFact(name="amount", value=value, resource_id="ord_1", observed_at=script.now)
    script.receipt("op_1", "get_order", facts=(fact,))
    state = project(script.events)
    script.add(
        HistoryCompacted,
        through_seq=script.seq,
        facts=state.model_dump(mode="json"),
        facts_hash=state_hash(state),
    )
    return script.events


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([1e16, 1.5e300, 1e-7, -0.0, 2**63 - 1, 0.1 + 0.2]))
def test_numbers_come_back_exactly_so_compaction_hashes_still_verify(
    ledger: Ledger, value: float | int
) -> None:
    """JSONB would turn 1e16 into an integer and the compaction's facts hash would then no longer
    match the replayed state; the log is stored byte for byte, so it does."""
    run_id = f"exact-{next(_run_ids)}"
    events = _with_fact(run_id, value)
    ledger.append(events)

    loaded = ledger.read(run_id)

    assert [e.model_dump_json() for e in loaded] == [e.model_dump_json() for e in events]
    amount = project(loaded).fact("ord_1", "amount")
    assert amount is not None and type(amount.value) is type(value)
