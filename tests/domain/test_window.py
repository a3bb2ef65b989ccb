"""A bounded state (``domain.window``): runs of any length carry the same size, lose no fact, and
the gate still refuses what it refused before the entries left the state."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentledger.domain import events as ev
from agentledger.domain.compaction import compact
from agentledger.domain.errors import InconsistentEvent
from agentledger.domain.events import RunEvent
from agentledger.domain.fold import project, state_hash
from agentledger.domain.governance import Allow
from agentledger.domain.run_loop import next_step
from agentledger.domain.state import WorkingState
from bench.factories import RunScript
from tests.domain.test_compaction import boundaries
from tests.domain.test_governance import (
    approve,
    decide,
    denial,
    dispatch,
    read_order,
    refund,
    verified_order,
)
from tests.strategies import runs as valid_runs

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
HISTORIES = ("completed_actions", "decisions", "rejected_options", "evidence", "conversation")


def compacted(s: RunScript, window: int) -> ev.HistoryCompacted:
    """Compact the script's run where it stands, as the workflow does before continuing."""
    marker = compact(
        project(s.events), recorded_at=s.now, manifest_hash=s.manifest_hash, window=window
    )
    s.events.append(marker)
    return marker


def current(state: WorkingState) -> dict[str, object]:
    """What a run still owes or knows: never moved out of the state."""
    return {
        name: getattr(state, name)
        for name in (
            "verified_facts", "resources", "in_flight", "pending_approvals", "unresolved_errors",
            "used", "budget", "proposed_action", "awaiting", "phase", "status", "work_order",
        )
    }  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(valid_runs(max_moves=40), st.integers(1, 3), st.data())
def test_a_bounded_log_projects_to_the_same_state_from_its_head_or_from_the_start(
    events: list[RunEvent], window: int, data: st.DataObject
) -> None:
    assume(all(e.kind != "history_compacted" for e in events))
    cuts = boundaries(events)
    if not cuts:
        return
    n = data.draw(st.sampled_from(cuts))
    before = project(events[:n])
    marker = compact(before, recorded_at=NOW, manifest_hash=events[0].manifest_hash, window=window)
    rest = [e.model_copy(update={"seq": e.seq + 1}) for e in events[n:]]

    at_marker = project([*events[:n], marker])
    full = project([*events[:n], marker, *rest])
    shortened = project([marker, *rest])

    assert shortened == full
    assert state_hash(shortened) == state_hash(full)
    assert next_step(shortened, None) == next_step(full, None)
    assert current(at_marker) == current(before)
    moved = at_marker.archived.entries if at_marker.archived else {}
    for name in HISTORIES:
        kept = getattr(at_marker, name)
        assert len(kept) <= window
        assert kept == getattr(before, name)[len(getattr(before, name)) - len(kept) :]
        assert len(kept) + moved.get(name, 0) == len(getattr(before, name))


def test_a_long_run_carries_the_same_size_at_every_compaction() -> None:
    s = verified_order()
    sizes = []
    for batch in range(30):
        for i in range(20):
            read_order(s, f"op_{batch}_{i}")
        s.step()
        s.proceed()
        compacted(s, window=10)
        sizes.append(len(project(s.events).model_dump_json()))
    state = project(s.events)
    assert state.archived is not None
    assert state.archived.entries["completed_actions"] == 30 * 20 + 1 - 10
    assert max(sizes[1:]) - min(sizes[1:]) < 0.02 * min(sizes[1:]), sizes
    assert project(s.events[-1:]) == state  # from the latest compaction alone


def test_a_write_archived_long_ago_is_still_not_repeated() -> None:
    s = verified_order()
    approve(s, refund())
    allow = decide(refund(), project(s.events))
    assert isinstance(allow, Allow)
    dispatch(s, allow, "op_9")
    for i in range(3):  # within the budget's tool calls
        read_order(s, f"op_read_{i}")
    s.step("draft_answer")
    compacted(s, window=2)
    state = project(s.events)
    assert state.receipt_for("op_9") is None  # left the window
    assert set(state.archived.settled_writes.values()) == {"succeeded"}  # type: ignore[union-attr]
    assert denial(decide(refund(), state, operation_id="op_10"))[0] == "already_done"


def ask(s: RunScript, approval_id: str, op: str, amount: float) -> None:
    needs = decide(refund(amount=amount), project(s.events), operation_id=op)
    s.add(
        ev.ApprovalRequested, approval_id=approval_id, operation_id=op,
        proposal=needs.proposal, proposal_digest=needs.proposal_digest,  # type: ignore[union-attr]
        requested_by="usr_73", approver_role="approver", expires_at=s.now.replace(year=2027),
    )  # fmt: skip


def test_spent_approvals_leave_and_a_rejection_stays_binding() -> None:
    s = verified_order()
    approve(s, refund(amount=10.0), approval_id="appr_used", op="op_9")
    allow = decide(refund(amount=10.0), project(s.events))
    assert isinstance(allow, Allow)
    dispatch(s, allow, "op_9")
    ask(s, "appr_expired", "op_10", amount=15.0)
    s.add(ev.ApprovalExpired, approval_id="appr_expired")
    ask(s, "appr_no", "op_11", amount=20.0)
    s.add(ev.ApprovalRejected, approval_id="appr_no", approver="mgr_1", reason="too much")
    s.step("draft_answer")
    compacted(s, window=1)
    state = project(s.events)
    # The used grant left; the latest spent one stays; a person's refusal always stays.
    assert state.approvals.keys() == {"appr_expired", "appr_no"}
    assert state.archived is not None and state.archived.entries["approvals"] == 1
    refused = decide(refund(amount=20.0), state, operation_id="op_12")
    assert denial(refused)[0] == "approval_previously_rejected"


def test_facts_that_do_not_match_their_hash_are_refused_at_the_head_of_a_log() -> None:
    s = verified_order()
    for i in range(5):
        read_order(s, f"op_{i}")
    s.step()
    s.proceed()
    marker = compacted(s, window=2)
    forged = marker.model_copy(update={"facts": {**marker.facts, "compacted_through_seq": 1}})
    try:
        project([forged])
    except InconsistentEvent:
        return
    raise AssertionError("a compaction whose facts do not match its hash was loaded")


ARCHIVE_DIGEST = """
from tests.domain.test_window import many_spent_approvals
print(many_spent_approvals().archived.digest)
"""


def many_spent_approvals() -> WorkingState:
    """A state whose archive moved several spent approvals out."""
    s = verified_order()
    for i in range(6):
        ask(s, f"appr_{i}", f"op_{i + 10}", amount=float(i + 1))
        s.add(ev.ApprovalExpired, approval_id=f"appr_{i}")
    s.step("draft_answer")
    compacted(s, window=1)
    state = project(s.events)
    assert state.archived is not None and state.archived.entries["approvals"] == 5
    return state


def test_the_archive_digest_is_the_same_in_every_process() -> None:
    """Workers and the ledger's checks fold in different processes, each with its own hash
    seed: nothing in the digest may follow a set's order."""
    digests = {
        subprocess.run(
            [sys.executable, "-c", ARCHIVE_DIGEST],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True, text=True, check=True,
        ).stdout
        for seed in ("1", "2", "3", "4")
    }  # fmt: skip
    assert len(digests) == 1, digests
