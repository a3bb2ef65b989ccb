"""Compaction keeps every typed fact exactly, and only ever happens between operations."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentledger.domain.compaction import (
    MAX_CARRIED_BYTES,
    CompactionNotAllowed,
    can_compact,
    carried_size_problem,
    compact,
)
from agentledger.domain.events import RunEvent
from agentledger.domain.fold import evolve, project, state_hash
from agentledger.domain.run_loop import next_step
from agentledger.domain.state import SUMMARY_CHARS
from bench.factories import RunScript
from tests.strategies import runs as valid_runs

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def boundaries(events: list[RunEvent]) -> list[int]:
    """Every prefix length after which the run sits at a completed-operation boundary."""
    return [n for n in range(1, len(events) + 1) if can_compact(project(events[:n]))]


@settings(max_examples=40, deadline=None)
@given(valid_runs(), st.data())
def test_a_compacted_log_projects_to_the_same_state_as_the_full_log(
    events: list[RunEvent], data: st.DataObject
) -> None:
    assume(all(e.kind != "history_compacted" for e in events))  # re-numbering one is not ours
    cuts = boundaries(events)
    if not cuts:
        return
    n = data.draw(st.sampled_from(cuts))
    before = project(events[:n])
    marker = compact(before, recorded_at=NOW, manifest_hash=events[0].manifest_hash)
    rest = [e.model_copy(update={"seq": e.seq + 1}) for e in events[n:]]

    full = project([*events[:n], marker, *rest])
    shortened = project([marker, *rest])

    assert shortened == full
    assert state_hash(shortened) == state_hash(full)
    assert next_step(shortened, None) == next_step(full, None)
    assert shortened.completed_actions == full.completed_actions  # no tool call is repeated


@settings(max_examples=40, deadline=None)
@given(valid_runs())
def test_compaction_is_refused_in_the_middle_of_an_operation(events: list[RunEvent]) -> None:
    for n in range(1, len(events) + 1):
        state = project(events[:n])
        if state.in_flight or state.pending_approvals:
            with pytest.raises(CompactionNotAllowed):
                compact(state, recorded_at=NOW, manifest_hash="sha256:x")


@settings(max_examples=20, deadline=None)
@given(valid_runs())
def test_a_compaction_marker_that_does_not_match_the_log_is_rejected(
    events: list[RunEvent],
) -> None:
    cuts = boundaries(events)
    if len(cuts) < 2:
        return
    stale = compact(project(events[: cuts[0]]), recorded_at=NOW, manifest_hash="sha256:x")
    later = project(events[: cuts[-1]])
    with pytest.raises(Exception, match="does not match"):
        evolve(later, stale.model_copy(update={"seq": later.last_seq + 1}))


def test_what_a_run_carries_per_action_is_bounded_however_large_the_result() -> None:
    script = RunScript()
    script.started()
    script.step("choose_next_action")
    script.call("get_order", {"order_id": "ord_4821"})
    script.authorise("op_1", "get_order", {"order_id": "ord_4821"})
    receipt = script.receipt("op_1", "get_order")
    line = "get_order: succeeded | " + "x" * 60_000
    big = receipt.model_copy(
        update={"receipt": receipt.receipt.model_copy(update={"user_view": line})}
    )
    script.events[-1] = big

    [action] = project(script.events).completed_actions

    assert len(action.summary) <= SUMMARY_CHARS
    assert action.summary.startswith("get_order: succeeded | xxx")
    assert action.summary.endswith(
        f"({len(line) - SUMMARY_CHARS + 40} more characters in the receipt)"
    )
    assert carried_size_problem(MAX_CARRIED_BYTES) is None
    assert "half Temporal's 2 MB" in str(carried_size_problem(MAX_CARRIED_BYTES + 1))
