"""Crypto-shredding in the ledger, on both backends: each run's events sealed under its subject's
key, readable with the ring, and erased for good while the log keeps its structure and digests."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Text, cast, func, select, update

from agentledger.activities.doors import ScheduleJournal
from agentledger.activities.ledger import (
    ContentErased,
    Ledger,
    LedgerConflict,
    LedgerError,
    RunFilter,
    Sealer,
    SubjectErased,
    erasure,
    erasure_log,
    retention,
)
from agentledger.activities.ledger._search_terms import words
from agentledger.activities.ledger._tables import (
    answer_chunks,
    approvals,
    context_packets,
    run_events,
    run_terms,
    runs,
    search_keys,
    tool_outputs,
)
from agentledger.domain.retention import parse_retention
from bench.factories import REQUEST, T0, RunScript, principal, refund_run
from tests.contract._ring import RING


def stored_payloads(ledger: Ledger, run_id: str) -> list[str]:
    query = select(cast(run_events.c.payload, Text)).where(run_events.c.run_id == run_id)
    with ledger.engine.connect() as conn:
        return list(conn.scalars(query.order_by(run_events.c.seq)))


def test_sealed_events_read_back_exactly_and_are_stored_as_envelopes(sealed: Ledger) -> None:
    events = refund_run().events
    sealed.append(events)

    assert sealed.read("run-1") == events
    stored = stored_payloads(sealed, "run-1")
    assert all(text.startswith('{"sealed":"sk_') for text in stored)
    assert not any("ord_4821" in text or "refund" in text for text in stored)
    assert sealed.get_run("run-1") is not None  # the read models are derived as before


def test_a_runs_packets_tool_outputs_and_answer_streams_are_sealed_under_its_key_too(
    sealed: Ledger, database_url: str
) -> None:
    sealed.append(refund_run().events)
    packet = {"items": [{"text": "Can I get a refund for order ord_4821?"}], "n": 1e16}
    sealed.put_packet("sha256:p1", "run-1", "choose_next_action", packet)
    sealed.put_tool_output("sha256:o1", "run-1", "op_3", "get_order", {"order_id": "ord_4821"})

    number = sealed.open_stream("run-1", "draft_answer", 4, 1)
    sealed.append_chunk("run-1", number, 0, "Your refund for ord_4821 ")
    sealed.append_chunk("run-1", number, 25, "is on its way.")

    assert sealed.get_packet("sha256:p1") == packet  # exactly, 1e16 a float still
    assert sealed.read_stream("run-1", number, 25).text == "is on its way."
    with sealed.engine.connect() as conn:
        stored = [
            conn.execute(select(cast(c, Text))).scalars().all()
            for c in (context_packets.c.body, tool_outputs.c.body, answer_chunks.c.text)
        ]
    assert all(text.startswith('{"sealed":"sk_') for rows in stored for text in rows)
    assert not any("ord_4821" in text for rows in stored for text in rows)
    with Ledger.open(database_url) as without_ring, pytest.raises(ContentErased):
        without_ring.get_packet("sha256:p1")


def test_the_read_models_copies_of_a_runs_content_are_sealed_and_read_back_in_clear(
    sealed: Ledger, database_url: str
) -> None:
    """Its request, its answer and its approvals' arguments, in the runs list and the inbox."""
    sealed.append(refund_run().events)
    run = sealed.get_run("run-1")
    assert run is not None and run.request_text == REQUEST
    (approval,) = sealed.approvals(status=None, run_id="run-1")
    assert run is not None and run.answer and "ord_4821" in json.dumps(approval.arguments)
    assert sealed.list_runs()[0].answer == run.answer
    with sealed.engine.connect() as conn:
        answers = conn.execute(select(runs.c.answer, runs.c.request_text)).all()
        arguments = conn.execute(select(cast(approvals.c.arguments, Text))).scalars().all()
    ((stored_answer, request),) = answers
    assert stored_answer.startswith('{"sealed":"sk_') and run.answer not in stored_answer
    assert all("ord_4821" not in text and '{\\"sealed\\":' in text for text in arguments)
    assert request.startswith('{"sealed":"sk_') and "4821" not in request
    with Ledger.open(database_url) as bare, pytest.raises(ContentErased, match="key ring"):
        bare.get_run("run-1")


def test_a_retried_append_is_a_no_op_and_a_different_event_a_conflict(sealed: Ledger) -> None:
    script = RunScript()
    events = [script.started(), script.step(), script.step()]
    assert sealed.append(events) == 3
    assert sealed.append(events) == 0  # new nonces, same digests: the same events
    other = events[2].model_copy(update={"step": "another_step"})
    with pytest.raises(LedgerConflict):
        sealed.append([other])


def test_a_ledger_opened_without_the_ring_refuses_sealed_content(
    sealed: Ledger, database_url: str
) -> None:
    sealed.append(refund_run().events)
    with Ledger.open(database_url) as bare, pytest.raises(ContentErased, match="key ring"):
        bare.read("run-1")
    with Ledger.open(database_url) as other:  # another process with the same ring reads it
        other.seal_with(Sealer(RING))
        assert other.read("run-1") == sealed.read("run-1")


def test_erasure_shreds_the_log_keeps_its_digests_and_refuses_a_second_time(
    sealed: Ledger, database_url: str, tmp_path: Path
) -> None:
    sealed.append(refund_run("run-1").events + refund_run("run-2").events)
    sealed.append(refund_run("run-other", finish=False).events[:1])  # another subject's
    other = RunScript("run-o")
    sealed.append([other.started("Where is my parcel?", who=principal("usr_88"))])
    digest_before = erasure_log.log_digest(sealed, "run-1")

    begun = erasure.begin(sealed, "acme", "usr_73")
    assert set(begun.runs) == {"run-1", "run-2", "run-other"}
    late = RunScript("run-late")
    with pytest.raises(SubjectErased):  # a run starting meanwhile is refused, not half-stored
        sealed.append([late.started()])
    done = erasure.finish(sealed, begun, by="dpo_1", reason="art. 17 request", verified={})

    assert done.affected["runs"] == 3
    with pytest.raises(ContentErased):
        sealed.read("run-1")
    assert erasure_log.log_digest(sealed, "run-1") == digest_before
    record = erasure_log.erased_run(sealed, "run-1")
    assert record is not None and (record.events, record.log_digest) == digest_before
    assert record.erased_by == "dpo_1" and record.verified == "no history"
    row = sealed.get_run("run-1")
    assert row is not None and row.request_text == "" and row.answer is None
    assert sealed.read("run-o")  # usr_88's run is untouched
    if database_url.startswith("sqlite"):
        raw = Path(database_url.removeprefix("sqlite:///")).read_bytes()
        assert REQUEST.encode() not in raw and b"ord_4821" not in raw

    with pytest.raises(erasure.AlreadyErased):
        erasure.begin(sealed, "acme", "usr_73")
    with pytest.raises(erasure.UnknownSubject):
        erasure.begin(sealed, "acme", "usr_nobody")
    again = RunScript("run-again")  # the subject may come back: a new key, a new run
    sealed.append([again.started()])
    assert sealed.read("run-again") == again.events


def test_a_worker_holding_a_runs_key_stores_nothing_more_once_the_erasure_is_done(
    database_url: str,
) -> None:
    """A worker caches each run's key; what the erasure did is seen by its next append all the
    same. While it runs, a run already stored may record how it ends but none starts; after
    it, nothing more is stored."""
    with Ledger.open(database_url) as worker, Ledger.open(database_url) as officer:
        worker.seal_with(Sealer(RING))
        officer.seal_with(Sealer(RING))
        script = RunScript("run-1")
        worker.append([script.started(), script.step()])  # the run's key is cached now
        begun = erasure.begin(officer, "acme", "usr_73")
        worker.append([script.step()])  # how the run ends (the erasure cancels it)
        with pytest.raises(SubjectErased, match="being erased"):
            worker.append([RunScript("run-2").started()])
        erasure.finish(officer, begun, by="dpo_1", reason="r", verified={})
        with pytest.raises(SubjectErased, match="run-1"):
            worker.append([script.step()])
        record = erasure_log.erased_run(officer, "run-1")
        assert record is not None and record.events == 3


def test_erasure_shreds_runs_stored_in_clear_too(ledger: Ledger) -> None:
    """A ledger that never sealed (the codec off) still erases: its events are sealed then
    under a key nobody keeps."""
    ledger.append(refund_run().events)
    digest = erasure_log.log_digest(ledger, "run-1")
    erasure.finish(ledger, erasure.begin(ledger, "acme", "usr_73"), by="dpo_1", reason="r",
                   verified={"run-1": "matched"})  # fmt: skip

    assert all(t.startswith('{"sealed":"shredded_') for t in stored_payloads(ledger, "run-1"))
    assert erasure_log.log_digest(ledger, "run-1") == digest
    with pytest.raises(ContentErased):
        ledger.read("run-1")


def test_retention_shreds_runs_ended_long_enough_ago_and_the_subjects_key_lives_on(
    sealed: Ledger,
) -> None:
    old = refund_run("run-old", start=T0).events
    recent = refund_run("run-recent", start=T0 + timedelta(days=100)).events
    sealed.append(old + recent)
    digest = erasure_log.log_digest(sealed, "run-old")
    now = T0 + timedelta(days=101)

    assert retention.shred_expired(sealed, {"globex": 30}, now) == 0  # another tenant's policy
    assert retention.shred_expired(sealed, {"*": 90}, now) == 1
    with pytest.raises(ContentErased):
        sealed.read("run-old")
    assert sealed.read("run-recent") == recent  # the subject's key still opens the rest
    assert erasure_log.log_digest(sealed, "run-old") == digest
    record = erasure_log.erased_run(sealed, "run-old")
    assert record is not None and record.erased_by == "retention"
    assert retention.shred_expired(sealed, {"acme": 90}, now) == 0  # each run once


def test_retention_is_read_as_days_per_tenant() -> None:
    assert parse_retention("") == {}
    assert parse_retention("90") == {"*": 90}
    assert parse_retention("acme=30, *=365") == {"acme": 30, "*": 365}
    for bad in ("acme", "acme=0", "acme=1,acme=2", "=3", "acme=ninety"):
        with pytest.raises(ValueError):
            parse_retention(bad)


def test_a_late_event_of_an_erased_run_is_refused_and_an_altered_one_is_named(
    sealed: Ledger,
) -> None:
    script = refund_run("run-1")
    sealed.append(script.events)
    erasure.finish(sealed, erasure.begin(sealed, "acme", "usr_73"), by="d", reason="r",
                   verified={})  # fmt: skip
    sealed.seal_with(Sealer(RING))  # another worker: nothing cached about the run
    with pytest.raises(SubjectErased, match="erased"):
        sealed.append([script.step()])  # never under a new key of the subject

    other = RunScript("run-o")
    sealed.append([other.started("Where is my parcel?", who=principal("usr_88"))])
    stored = stored_payloads(sealed, "run-o")[0]
    envelope = json.loads(stored)
    data = envelope["data"]
    envelope["data"] = data[:8] + ("B" if data[8] == "A" else "A") + data[9:]
    with sealed.engine.begin() as conn:
        conn.execute(
            update(run_events).where(run_events.c.run_id == "run-o").values(payload=envelope)
        )
    with pytest.raises(LedgerError, match="altered"):
        sealed.read("run-o")


def test_a_sealed_request_is_found_by_its_words_digests_and_by_nothing_once_erased(
    sealed: Ledger,
) -> None:
    sealed.append(refund_run().events)

    def found(text: str) -> list[str]:
        return [r.run_id for r in sealed.search_runs(RunFilter(text=text))]

    for text in ("ORD_4821", "late 4821", "Refund", "arrived, LATE"):
        assert found(text) == ["run-1"], text
    for text in ("4822", "arrive", "refund 4822", "sealed"):  # whole words of the request only
        assert found(text) == [], text
    with sealed.engine.connect() as conn:
        terms = set(conn.execute(select(run_terms.c.term)).scalars())
        assert conn.execute(select(func.count()).select_from(search_keys)).scalar_one() == 1
    assert len(terms) == len(words(REQUEST)) and not terms & set(words(REQUEST))

    assert sealed.rebuild_read_models() > 0  # the digests are read models too
    assert found("ORD_4821") == ["run-1"]
    erasure.finish(sealed, erasure.begin(sealed, "acme", "usr_73"), by="d", reason="r", verified={})
    assert found("ORD_4821") == [] and found("late") == []
    with sealed.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(run_terms)).scalar_one() == 0


def test_a_request_stored_in_clear_is_found_by_any_part_of_a_word(ledger: Ledger) -> None:
    ledger.append(refund_run().events)
    for text in ("ORD_4821", "arrive", "rd_48"):
        assert [r.run_id for r in ledger.search_runs(RunFilter(text=text))] == ["run-1"], text


def test_an_erasure_blanks_the_requests_of_the_schedules_that_ran_as_the_subject(
    sealed: Ledger,
) -> None:
    """In the erasure's own transaction, so a restored backup's re-erasure blanks them too."""
    sealed.append(refund_run().events)
    journal = ScheduleJournal(sealed.engine)
    for sid, who in (("s-73", "usr_73"), ("s-88", "usr_88")):
        journal.record(sid, "created", "ops", T0, {"principal": who, "request": REQUEST})

    done = erasure.finish(
        sealed, erasure.begin(sealed, "acme", "usr_73"), by="d", reason="r", verified={}
    )

    assert done.affected["schedule_entries"] == 1
    assert [c.definition["request"] for c in journal.history("s-73")] == [""]
    assert [c.definition["request"] for c in journal.history("s-88")] == [REQUEST]
