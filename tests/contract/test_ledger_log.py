"""The event log's contract, identical on every backend (see ``database_url`` in conftest)."""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import insert, select

from agentledger.activities.ledger import (
    Ledger,
    LedgerConflict,
    LedgerGap,
    PayloadRejected,
    PayloadTooLarge,
)
from agentledger.activities.ledger._tables import run_events
from agentledger.domain.events import SCHEMA_VERSION, RunEvent, RunFailed
from agentledger.domain.fold import project
from bench.factories import RunScript, principal, refund_run


def test_events_read_back_in_seq_order_whatever_the_order_within_a_batch(ledger: Ledger) -> None:
    events = refund_run().events
    ledger.append(list(reversed(events[:10])))
    ledger.append(events[10:])

    assert ledger.read("run-1") == events
    assert ledger.read("run-1", after_seq=15) == events[15:]
    assert ledger.last_seq("run-1") == len(events)


def test_runs_are_kept_apart(ledger: Ledger) -> None:
    first, second = refund_run("run-a").events, refund_run("run-b").events
    ledger.append(first + second)

    assert ledger.read("run-a") == first
    assert ledger.read("run-b") == second
    assert ledger.read("run-unknown") == []
    assert ledger.last_seq("run-unknown") == 0


def test_re_appending_the_same_events_is_a_no_op_success(ledger: Ledger) -> None:
    events = refund_run().events

    assert ledger.append(events[:5]) == 5
    assert ledger.append(events[:5]) == 0
    assert ledger.append(events) == len(events) - 5
    assert ledger.read("run-1") == events


def test_a_batch_may_repeat_an_event_but_not_contradict_itself(ledger: Ledger) -> None:
    script = RunScript()
    started, step = script.started(), script.step()
    assert ledger.append([started, step, step]) == 2

    later = script.step()
    with pytest.raises(LedgerConflict, match="two different events") as caught:
        ledger.append([later, later.model_copy(update={"step": "draft_answer"})])
    assert (caught.value.run_id, caught.value.seq) == ("run-1", 3)


def test_a_different_event_at_a_taken_seq_is_a_conflict_naming_run_and_seq(
    ledger: Ledger,
) -> None:
    script = RunScript()
    ledger.append([script.started(), script.step("choose_next_action")])
    rival = script.events[1].model_copy(update={"step": "draft_answer"})

    with pytest.raises(LedgerConflict) as caught:
        ledger.append([rival])

    assert (caught.value.run_id, caught.value.seq) == ("run-1", 2)
    assert "run run-1" in str(caught.value) and "seq 2" in str(caught.value)
    assert ledger.read("run-1") == script.events


def test_a_conflict_rolls_back_the_whole_batch(ledger: Ledger) -> None:
    script = RunScript()
    ledger.append([script.started()])
    fresh = script.step()
    rival = script.events[0].model_copy(update={"policy_version": "another"})

    with pytest.raises(LedgerConflict):
        ledger.append([rival, fresh])

    assert ledger.last_seq("run-1") == 1


def test_an_equal_event_stored_with_its_set_in_another_order_is_not_a_conflict(
    ledger: Ledger,
) -> None:
    """Bytes and JSON differ (a frozenset listed in another order), the events are equal."""
    started = RunScript().started(who=principal(scopes=frozenset({"a:read", "b:read", "c:read"})))
    stored = started.model_dump(mode="json")
    stored["work_order"]["principal"]["scopes"] = ["c:read", "a:read", "b:read"]
    with ledger.engine.begin() as conn:
        conn.execute(insert(run_events), {**_columns(started), "payload": stored})

    assert ledger.append([started]) == 0
    assert ledger.read("run-1") == [started]


def _columns(event: RunEvent) -> dict[str, object]:
    return {
        "run_id": event.run_id,
        "seq": event.seq,
        "kind": event.kind,
        "recorded_at": event.recorded_at,
        "manifest_hash": event.manifest_hash,
        "schema_version": event.schema_version,
    }


def test_an_event_stored_in_an_older_schema_is_upcast_on_read(ledger: Ledger) -> None:
    """A v0 ``run_failed`` (one ``error`` string, no ``schema_version``) loads as today's model,
    and re-appending its current form is recognised as the same event, not a conflict."""
    script = RunScript()
    ledger.append([script.started()])
    current = script.fail("budget_exhausted", "no steps left")
    v0 = current.model_dump(mode="json", exclude={"reason_code", "message", "schema_version"})
    with ledger.engine.begin() as conn:
        conn.execute(
            insert(run_events),
            {
                **_columns(current),
                "schema_version": 0,
                "payload": {**v0, "error": "budget_exhausted: no steps left"},
            },
        )

    loaded = ledger.read("run-1")

    assert isinstance(loaded[1], RunFailed) and loaded[1].schema_version == SCHEMA_VERSION
    assert loaded == script.events
    assert ledger.append([current]) == 0


def test_an_oversized_event_is_rejected_with_a_clear_error_and_nothing_is_stored(
    database_url: str,
) -> None:
    with Ledger.open(database_url, max_event_bytes=4096) as ledger:
        script = RunScript()
        started = script.started()
        huge = script.evidence("policy#all", "x" * 5000)

        with pytest.raises(PayloadTooLarge) as caught:
            ledger.append([started, huge])

        message = str(caught.value)
        assert "evidence_recorded #2 of run 'run-1'" in message and "4,096" in message
        assert caught.value.size > caught.value.limit == 4096
        assert ledger.last_seq("run-1") == 0


def test_the_default_limit_is_256_kib_per_event(ledger: Ledger) -> None:
    script = RunScript()
    script.started()
    script.evidence("policy#all", "x" * (300 * 1024))

    with pytest.raises(PayloadTooLarge, match="262,144"):
        ledger.append(script.events)


def test_text_with_nul_characters_is_stored_exactly(ledger: Ledger) -> None:
    script = RunScript()
    script.started(request="refund\x00please")
    script.evidence("policy#a", "before\x00after")
    ledger.append(script.events)

    assert ledger.read("run-1") == script.events
    run = ledger.get_run("run-1")
    assert run is not None and run.request_text == "refund\ufffdplease"  # display copy only


def test_an_identifier_with_a_nul_character_is_rejected(ledger: Ledger) -> None:
    with pytest.raises(PayloadRejected, match="NUL"):
        ledger.append([RunScript("run\x00x").started()])


def test_append_in_joins_the_callers_transaction(ledger: Ledger) -> None:
    events = refund_run().events
    with ledger.engine.connect() as conn, conn.begin() as tx:
        assert ledger.append_in(conn, events[:3]) == 3
        tx.rollback()
    assert ledger.last_seq("run-1") == 0

    with ledger.begin() as conn:
        ledger.append_in(conn, events)
    assert ledger.read("run-1") == events
    assert project(ledger.read("run-1")) == project(events)


WRITERS, SEQS = 4, 12


def _rival_script(writer: int) -> list[RunEvent]:
    script = RunScript("race")
    script.started(request=f"writer {writer}")
    for _ in range(SEQS - 1):
        script.step(f"step-of-writer-{writer}")
    return script.events


def test_racing_appenders_get_exactly_one_winner_per_seq(ledger: Ledger) -> None:
    gate = threading.Barrier(WRITERS)
    winners: dict[int, list[int]] = defaultdict(list)
    losers: dict[int, list[int]] = defaultdict(list)

    def write(writer: int) -> None:
        gate.wait()
        for event in _rival_script(writer):
            try:
                if ledger.append([event]) == 1:
                    winners[event.seq].append(writer)
            except LedgerConflict as conflict:
                assert (conflict.run_id, conflict.seq) == ("race", event.seq)
                losers[event.seq].append(writer)

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))

    assert all(len(winners[seq]) == 1 for seq in range(1, SEQS + 1)), winners
    assert all(len(losers[seq]) == WRITERS - 1 for seq in range(1, SEQS + 1)), losers
    stored = ledger.read("race")
    assert [e.seq for e in stored] == list(range(1, SEQS + 1))
    assert stored == [_rival_script(winners[e.seq][0])[e.seq - 1] for e in stored]


def test_racing_appenders_of_the_same_events_all_succeed_once(ledger: Ledger) -> None:
    events = refund_run("same").events
    gate = threading.Barrier(WRITERS)

    def write(_: int) -> int:
        gate.wait()
        return sum(ledger.append(events[i : i + 3]) for i in range(0, len(events), 3))

    with ThreadPoolExecutor(WRITERS) as pool:
        inserted = list(pool.map(write, range(WRITERS)))

    assert sum(inserted) == len(events)
    assert ledger.read("same") == events
    run = ledger.get_run("same")
    assert run is not None and run.status == "completed" and run.last_seq == len(events)


def test_the_indexed_columns_mirror_each_event(ledger: Ledger) -> None:
    events = refund_run().events
    ledger.append(events)

    query = select(
        run_events.c.run_id,
        run_events.c.seq,
        run_events.c.kind,
        run_events.c.recorded_at,
        run_events.c.manifest_hash,
        run_events.c.schema_version,
    ).order_by(run_events.c.seq)
    with ledger.engine.connect() as conn:
        rows = [tuple(row) for row in conn.execute(query)]

    assert rows == [
        (e.run_id, e.seq, e.kind, e.recorded_at, e.manifest_hash, e.schema_version) for e in events
    ]
    assert all(row[3].utcoffset() is not None for row in rows)


def test_an_append_that_would_leave_a_hole_is_refused_and_writes_nothing(ledger: Ledger) -> None:
    events = refund_run().events
    with pytest.raises(LedgerGap) as refused:
        ledger.append(events[10:])
    assert (refused.value.run_id, refused.value.seq) == ("run-1", 11)
    assert ledger.read("run-1") == [] and ledger.get_run("run-1") is None

    ledger.append(events[:5])
    with pytest.raises(LedgerGap, match="seq 7 would follow a missing seq 6"):
        ledger.append(events[6:9])
    assert ledger.last_seq("run-1") == 5


def test_a_retried_batch_whose_head_is_stored_passes_and_other_runs_are_judged_alone(
    ledger: Ledger,
) -> None:
    first, second = refund_run("run-a").events, refund_run("run-b").events
    ledger.append(first[:6])
    assert ledger.append(first[3:8] + second[:2]) == 4  # 4-6 stored already: a no-op for them
    with pytest.raises(LedgerGap) as refused:
        ledger.append(first[8:10] + second[3:5])  # run-b's seq 3 is missing
    assert refused.value.run_id == "run-b"
    assert ledger.last_seq("run-a") == 8
