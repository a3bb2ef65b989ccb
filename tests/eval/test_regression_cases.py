"""A recorded run as a regression case (``domain.evaluation.regression``): the case's origin
is the run up to a completed-operation boundary, its expectation what the run did after; a run
that has not ended, a point inside an operation, and an origin that does not fold to the hash it
records are refused."""

from __future__ import annotations

import pytest

from agentledger.app.registry import get_pack
from agentledger.domain.evaluation.regression import checked_origin, regression_case
from agentledger.domain.events import RunEvent
from agentledger.domain.forks import ForkRefused, boundaries
from tests.replay._recorded import read_history
from tests.replay.record import HISTORIES

WRITES = frozenset(n for n, c in get_pack("support").contracts.items() if c.scope == "write")


def _recorded(name: str) -> list[RunEvent]:
    recorded = read_history(HISTORIES / f"{name}.json")
    return [recorded.events[seq] for seq in sorted(recorded.events)]


def test_a_rejected_refund_expects_no_refund_and_a_rejecting_approver() -> None:
    events = _recorded("refund_rejected_sdk_v1")
    proposed = next(e.seq for e in events if e.kind == "approval_requested")
    seq = max(b for b in boundaries(events) if b < proposed)
    case = regression_case("c", events, seq, WRITES, {e.manifest_hash: {} for e in events})
    assert not case.approve and case.expect.approvals == 1 and case.expect.receipts == ()
    assert {p.tool for p in case.expect.no_receipts} == WRITES
    assert case.fork is not None and checked_origin(case.fork, "support") is None
    assert checked_origin(case.fork, "billing") == "its events are not a run of pack billing"
    tampered = case.fork.model_copy(update={"state_hash": "sha256:" + "0" * 64})
    assert checked_origin(tampered, "support") == (
        "its events do not fold to the state hash it records"
    )


def test_a_run_without_an_outcome_or_a_point_inside_an_operation_is_refused() -> None:
    events = _recorded("refund_rejected_sdk_v1")
    proposed = next(e.seq for e in events if e.kind == "approval_requested")
    seq = max(b for b in boundaries(events) if b < proposed)
    last = events[-1].seq
    for cut, at, code in (
        (proposed, seq, "run_not_ended"),
        (last, proposed, "fork_point_mid_operation"),
    ):
        kept = [e for e in events if e.seq <= cut]
        with pytest.raises(ForkRefused) as refused:
            regression_case("c", kept, at, WRITES, {e.manifest_hash: {} for e in kept})
        assert refused.value.code == code
