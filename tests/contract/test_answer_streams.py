"""Answer streams on both backends: chunks, takes that supersede each other, and pruning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._tables import runs
from agentledger.activities.run.answers import AnswerPublisher

RUN = "run_stream_1"
TEXT = "Your refund of 42.00 EUR is on its way."


def _publisher(ledger: Ledger, attempt: int = 1, run_id: str = RUN) -> AnswerPublisher:
    return AnswerPublisher(ledger, run_id, "draft_answer", 3, attempt, every=0.0)


def test_an_answer_is_written_as_it_grows_and_closed_done(ledger: Ledger) -> None:
    beats: list[int] = []
    publisher = AnswerPublisher(
        ledger, RUN, "draft_answer", 3, 1, every=0.0, beat=lambda: beats.append(1)
    )
    assert ledger.read_stream(RUN).stream is None
    for end in (5, 12, 20):
        publisher.answer_so_far(TEXT[:end])
    seen = ledger.read_stream(RUN)
    assert seen.stream is not None and seen.stream.status == "open" and seen.text == TEXT[:20]
    later = ledger.read_stream(RUN, seen.stream.number, 12)
    assert (later.offset, later.text) == (12, TEXT[12:20])
    publisher.finish(TEXT)
    done = ledger.read_stream(RUN)
    assert done.stream is not None and done.stream.status == "done" and done.text == TEXT
    assert (done.stream.step, done.stream.step_no, done.stream.attempt) == ("draft_answer", 3, 1)
    assert len(beats) == 4


def test_a_retried_attempt_supersedes_the_open_take(ledger: Ledger) -> None:
    first = _publisher(ledger, attempt=1)
    first.answer_so_far("Your ref")  # the worker dies here
    number = ledger.read_stream(RUN).stream.number  # type: ignore[union-attr]
    second = _publisher(ledger, attempt=2)
    second.answer_so_far("Your refund")
    second.finish(TEXT)
    read = ledger.read_stream(RUN, number, 8)  # the reader was at 8 in the first take
    assert read.stream is not None and read.stream.number == number + 1
    assert (read.offset, read.text, read.stream.attempt) == (0, TEXT, 2)
    assert [s.status for s in ledger.streams(RUN)] == ["superseded", "done"]


def test_a_retry_supersedes_even_a_take_that_was_done(ledger: Ledger) -> None:
    _publisher(ledger, attempt=1).finish(TEXT)  # done, then the worker died before returning
    _publisher(ledger, attempt=2).finish(TEXT)
    other_step = AnswerPublisher(ledger, RUN, "draft_answer", 5, 1, every=0.0)
    other_step.finish("Anything else?")
    statuses = [(s.step_no, s.attempt, s.status) for s in ledger.streams(RUN)]
    assert statuses == [(3, 1, "superseded"), (3, 2, "done"), (5, 1, "done")]


def test_a_final_answer_that_differs_from_the_stream_opens_a_new_take(ledger: Ledger) -> None:
    publisher = _publisher(ledger)
    publisher.answer_so_far("Your order")
    publisher.finish(TEXT)
    read = ledger.read_stream(RUN)
    assert read.stream is not None and read.stream.number == 2 and read.text == TEXT


def test_a_reply_that_was_no_answer_abandons_its_stream(ledger: Ledger) -> None:
    publisher = _publisher(ledger)
    publisher.answer_so_far("Your")
    publisher.finish(None)
    read = ledger.read_stream(RUN)
    assert read.stream is not None and read.stream.status == "abandoned"
    _publisher(ledger, run_id="run_quiet").finish(None)
    assert ledger.read_stream("run_quiet").stream is None


def test_streams_of_runs_ended_before_the_cut_are_pruned(ledger: Ledger) -> None:
    now = datetime.now(UTC)
    rows = {"ended_old": ("completed", now - timedelta(hours=2)), "running": ("running", now)}
    with ledger.begin() as conn:
        for run_id, (status, at) in rows.items():
            conn.execute(insert(runs).values(_run_row(run_id, status, at)))
    for run_id in (*rows, "ended_recently"):
        _publisher(ledger, run_id=run_id).finish(TEXT)
    assert ledger.prune_streams(now - timedelta(hours=1)) == 1
    assert ledger.read_stream("ended_old").stream is None
    assert ledger.read_stream("running").text == TEXT


def _run_row(run_id: str, status: str, at: datetime) -> dict[str, object]:
    return {
        "run_id": run_id,
        "status": status,
        "pack": "support",
        "principal_id": "usr_1",
        "tenant_id": "t1",
        "request_text": "refund?",
        "created_at": at,
        "updated_at": at,
        "last_seq": 1,
        "manifest_hash": "m",
    }


def test_an_answer_grown_past_the_limit_ends_its_stream_abandoned(ledger: Ledger) -> None:
    publisher = AnswerPublisher(ledger, RUN, "draft_answer", 3, 1, every=0.0, limit=12)
    publisher.answer_so_far("Your refund")
    publisher.answer_so_far("Your refund of 42")  # past the limit: the step will reject it
    publisher.answer_so_far("Your refund of 42.00 EUR")
    publisher.finish(None)
    read = ledger.read_stream(RUN)
    assert read.stream is not None and read.stream.status == "abandoned"
    assert read.text == "Your refund"  # nothing past the limit was shown
