"""Properties of the fold over random valid runs (see ``tests/strategies.py``)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import get_args

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentledger.domain.errors import (
    EventAfterEnd,
    ForeignEvent,
    InconsistentEvent,
    OutOfOrderEvent,
)
from agentledger.domain.events import HistoryCompacted, RunEvent, StepStarted
from agentledger.domain.fold import _HANDLERS, evolve, project, state_hash
from agentledger.domain.state import InFlightCall, Observation, WorkingState
from bench.factories import RunScript, principal, refund_run
from tests.strategies import runs

PROPERTY = settings(max_examples=150, deadline=None)


@PROPERTY
@given(runs())
def test_every_valid_run_projects_without_error(events: list[RunEvent]) -> None:
    state = project(events)

    assert state.last_seq == len(events)
    assert state.run_id == events[0].run_id


@PROPERTY
@given(runs(), st.data())
def test_projecting_a_prefix_then_the_rest_equals_projecting_the_whole(
    events: list[RunEvent], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(events)), label="cut")

    resumed = project(events[cut:], initial=project(events[:cut]))

    assert resumed == project(events)


@PROPERTY
@given(runs())
def test_evolving_one_event_at_a_time_equals_projecting(events: list[RunEvent]) -> None:
    state = WorkingState()
    for event in events:
        state = evolve(state, event)

    assert state == project(events)


@PROPERTY
@given(runs(), st.data())
def test_a_log_that_starts_at_a_compaction_resumes_the_same_state(
    events: list[RunEvent], data: st.DataObject
) -> None:
    ended = events[-1].kind in ("run_completed", "run_failed")
    cut = data.draw(st.integers(1, len(events) - ended), label="cut")  # nothing after the end
    # Later compactions name the seqs they cover, which the shift below would invalidate.
    assume(not any(isinstance(e, HistoryCompacted) for e in events[cut:]))
    before = project(events[:cut])
    compacted = HistoryCompacted(
        run_id=before.run_id,
        seq=cut + 1,
        recorded_at=events[cut - 1].recorded_at,
        manifest_hash=events[0].manifest_hash,
        through_seq=cut,
        facts=before.model_dump(mode="json"),
        facts_hash=state_hash(before),
    )
    rest = [e.model_copy(update={"seq": e.seq + 1}) for e in events[cut:]]

    full = project([*events[:cut], compacted, *rest])
    resumed = project([compacted, *rest])

    assert resumed == full


@PROPERTY
@given(runs(), st.data())
def test_skipping_or_repeating_a_seq_is_out_of_order(
    events: list[RunEvent], data: st.DataObject
) -> None:
    index = data.draw(st.integers(1, len(events)), label="index")
    shift = data.draw(st.sampled_from([-1, 0, 1, 5]), label="shift")
    state = project(events[:index])
    late = events[-1].model_copy(update={"seq": index + 1 + shift})

    if shift == 0:
        return  # the right seq: covered by the properties above
    with pytest.raises((OutOfOrderEvent, EventAfterEnd)):
        evolve(state, late)


@PROPERTY
@given(runs(), st.text(min_size=1, max_size=8))
def test_an_event_of_another_run_is_foreign(events: list[RunEvent], other: str) -> None:
    state = project(events)
    stranger = RunScript("run-h" + other).step()

    with pytest.raises(ForeignEvent, match="belongs to run"):
        evolve(state, stranger.model_copy(update={"seq": state.last_seq + 1}))


def colliding(prefix: str = "scope") -> tuple[str, str]:
    """Two strings in the same slot of a small set's hash table, in this process: frozensets of
    them iterate in insertion order, so equal sets serialise differently."""
    words = [f"{prefix}:{i}" for i in range(64)]
    return next((a, b) for a, b in itertools.combinations(words, 2) if hash(a) % 8 == hash(b) % 8)


def test_equal_states_hash_equally_whatever_the_order_their_sets_were_built_in() -> None:
    a, b = colliding()
    one, other = RunScript(), RunScript()
    one.started(who=principal(scopes=frozenset([a, b])))
    other.started(who=principal(scopes=frozenset([b, a])))

    assert project(one.events) == project(other.events)
    assert state_hash(project(one.events)) == state_hash(project(other.events))


def test_nothing_follows_the_end_of_a_run() -> None:
    script = refund_run()
    state = project(script.events)

    with pytest.raises(EventAfterEnd):
        evolve(state, script.step())


def test_a_receipt_for_a_call_never_made_is_inconsistent() -> None:
    script = RunScript()
    script.started()
    script.receipt("op_unknown", "get_order")

    with pytest.raises(InconsistentEvent, match="not in flight"):
        project(script.events)


def test_a_grant_for_another_proposal_is_inconsistent() -> None:
    script = refund_run(finish=False)
    script.add(
        type(script.grant(script.events[-1])),
        approval_id="appr_1",  # type: ignore[arg-type]
        approver="mgr_1",
        proposal_digest="sha256:" + "00" * 32,
    )
    del script.events[-2]
    script.events[-1] = script.events[-1].model_copy(update={"seq": len(script.events)})

    with pytest.raises(InconsistentEvent, match="another proposal"):
        project(script.events)


def test_a_compaction_that_does_not_match_the_log_is_inconsistent() -> None:
    script = refund_run(finish=False)
    script.add(HistoryCompacted, through_seq=script.seq, facts={}, facts_hash="sha256:" + "00" * 32)

    with pytest.raises(InconsistentEvent, match="does not match"):
        project(script.events)


@PROPERTY
@given(runs(), st.data())
def test_a_state_cut_anywhere_holds_only_typed_records(
    events: list[RunEvent], data: st.DataObject
) -> None:
    """The fold defers in-flight calls and observations to ``freeze``; none escapes unbuilt."""
    cut = data.draw(st.integers(0, len(events)), label="cut")

    state = project(events[:cut])

    assert all(type(call) is InFlightCall for call in state.in_flight.values())
    assert all(type(seen) is Observation for seen in state.observations.values())
    assert WorkingState.model_validate(state.model_dump()) == state


def test_every_kind_of_run_event_has_a_handler_in_the_fold_table() -> None:
    (union, *_) = get_args(RunEvent)

    assert set(get_args(union)) == set(_HANDLERS)


def test_a_subclass_of_an_event_folds_like_the_event() -> None:
    class NoteworthyStep(StepStarted):
        pass

    events = refund_run().events[:2]
    step = events[1]
    assert isinstance(step, StepStarted)
    renamed = NoteworthyStep(**step.model_dump())

    assert project([events[0], renamed]) == project(events)


def test_an_object_that_is_no_run_event_is_refused() -> None:
    started = refund_run().events[0]
    stranger = SimpleNamespace(run_id=started.run_id, seq=2)

    with pytest.raises(TypeError, match="not a run event"):
        project([started, stranger])  # type: ignore[list-item]
