"""Answer streams: the text an answer step's model call has produced so far.

A model step that answers writes what the answer says as it grows, in chunks keyed by (run,
stream number, offset); a stream is one take of one attempt of one step. Opening a stream
supersedes every stream of the run still open (a retried attempt, or a fallback model taking
over), so a reader that follows only the newest stream never shows half of one take glued to
another. Streams sit beside the log, never in it or in Temporal history: they say what the model
was saying, while the run's recorded answer is what it said. They are pruned after the run ends.
With a key ring, each chunk is stored sealed under the run's key, as the run's events are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from agentledger.activities.ledger._base import LedgerBase
from agentledger.activities.ledger._tables import answer_chunks, answer_streams, runs
from agentledger.domain.state import ENDED


@dataclass(frozen=True)
class AnswerStream:
    number: int
    step: str
    step_no: int
    attempt: int
    status: str
    """``open`` while the model speaks, ``done`` once its reply is in, ``superseded`` when a
    later take replaced it before it was done, ``abandoned`` when the reply was no answer."""


@dataclass(frozen=True)
class StreamRead:
    stream: AnswerStream | None
    """The run's newest stream (``None``: no answer has started)."""
    text: str
    """Its text from the offset asked for on."""
    offset: int
    """Where ``text`` starts in the stream."""


class AnswerStreams(LedgerBase):
    def open_stream(
        self, run_id: str, step: str, step_no: int, attempt: int, *, whole: str | None = None
    ) -> int:
        """A new stream for the run; its number. It supersedes every stream still open, and
        every earlier take of the same step however far it got (a retried attempt). With
        ``whole``, the stream is that text and ``done`` at once: one transaction, where a
        model that does not stream would otherwise pay three commits per answer."""
        for _ in range(3):  # two takes opening at once: the loser takes the next number
            try:
                with self._writing() as conn:
                    number = self._open_in(conn, run_id, step, step_no, attempt, whole)
                    if whole is not None:
                        text = self._sealed(conn, run_id, whole)
                        conn.execute(
                            insert(answer_chunks).values(
                                run_id=run_id, number=number, offset=0, text=text
                            )
                        )
                    return number
            except IntegrityError:
                continue
        raise RuntimeError(f"could not open an answer stream for {run_id}")

    def _open_in(
        self,
        conn: Connection,
        run_id: str,
        step: str,
        step_no: int,
        attempt: int,
        whole: str | None,
    ) -> int:
        streams = answer_streams.c
        newest = conn.execute(
            select(func.max(streams.number)).where(streams.run_id == run_id)
        ).scalar_one()
        replaced = or_(
            streams.status == "open", (streams.step_no == step_no) & (streams.status == "done")
        )
        conn.execute(
            update(answer_streams)
            .where(streams.run_id == run_id, replaced)
            .values(status="superseded")
        )
        number = (newest or 0) + 1
        conn.execute(
            insert(answer_streams).values(
                run_id=run_id,
                number=number,
                step=step,
                step_no=step_no,
                attempt=attempt,
                status="open" if whole is None else "done",
                opened_at=datetime.now(UTC),
            )
        )
        return int(number)

    def append_chunk(self, run_id: str, number: int, offset: int, text: str) -> None:
        with self._writing() as conn:
            sealed = self._sealed(conn, run_id, text)
            conn.execute(
                insert(answer_chunks).values(
                    run_id=run_id, number=number, offset=offset, text=sealed
                )
            )

    def _sealed(self, conn: Connection, run_id: str, text: str) -> str:
        """A chunk as stored: sealed under the run's key when the ledger has a ring."""
        if self.sealer is None:
            return text
        return self.sealer.seal_body(conn, run_id, text.encode()).decode()

    def close_stream(self, run_id: str, number: int, status: str = "done") -> None:
        """The take's reply is in: ``done`` when its chunks are the whole answer it gave,
        ``abandoned`` when the reply turned out not to be an answer."""
        with self._writing() as conn:
            conn.execute(
                update(answer_streams)
                .where(answer_streams.c.run_id == run_id, answer_streams.c.number == number)
                .where(answer_streams.c.status == "open")
                .values(status=status)
            )

    def read_stream(self, run_id: str, number: int = 0, offset: int = 0) -> StreamRead:
        """The newest stream and its text from ``offset`` on, if it is stream ``number``;
        from its start otherwise (the reader's stream was replaced)."""
        with self._reading() as conn:
            row = conn.execute(
                select(answer_streams)
                .where(answer_streams.c.run_id == run_id)
                .order_by(answer_streams.c.number.desc())
                .limit(1)
            ).first()
            if row is None:
                return StreamRead(None, "", 0)
            stream = AnswerStream(row.number, row.step, row.step_no, row.attempt, row.status)
            start = offset if number == stream.number else 0
            chunks = conn.execute(
                select(answer_chunks.c.offset, answer_chunks.c.text)
                .where(answer_chunks.c.run_id == run_id, answer_chunks.c.number == stream.number)
                .where(answer_chunks.c.offset >= start)
                .order_by(answer_chunks.c.offset)
            ).all()
            texts = self.open_stored(conn, [c.text for c in chunks])
        return StreamRead(stream, "".join(texts), start)

    def streams(self, run_id: str) -> list[AnswerStream]:
        """Every stream of the run, oldest first."""
        with self._reading() as conn:
            rows = conn.execute(
                select(answer_streams)
                .where(answer_streams.c.run_id == run_id)
                .order_by(answer_streams.c.number)
            ).all()
        return [AnswerStream(r.number, r.step, r.step_no, r.attempt, r.status) for r in rows]

    def prune_streams(self, ended_before: datetime) -> int:
        """Drop the streams of runs that ended before ``ended_before``; how many."""
        ended = select(runs.c.run_id).where(
            runs.c.status.in_(ENDED), runs.c.updated_at < ended_before
        )
        with self._writing() as conn:
            conn.execute(delete(answer_chunks).where(answer_chunks.c.run_id.in_(ended)))
            dropped = conn.execute(delete(answer_streams).where(answer_streams.c.run_id.in_(ended)))
        return dropped.rowcount or 0
