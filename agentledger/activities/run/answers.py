"""An answer step's text, written to the ledger's answer streams while the model speaks.

The ``AnswerSink`` a model step hands its model call. What the answer says so far is written in
chunks (at most one write per ``every`` seconds, so a fast model costs a few writes a second),
each chunk at its offset in the stream. A stream opens with the first text, so a step that does
not answer leaves none. When the call ends, ``finish`` writes what is left of the answer the
step decided on and closes the stream ``done``: the stream's chunks then spell exactly that
answer. A model that was not streamed (a scripted model, a provider configured without
``stream``) has its whole answer written at once there, so every answer can be followed.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from temporalio import activity

from agentledger.activities.ledger import AnswerStreams
from agentledger.domain.limits import MAX_ANSWER_CHARS

ALIVE_EVERY = 3.0
"""Seconds between heartbeats while a model call runs; the workflow's heartbeat timeout for the
model step is a few of these, so a worker that dies mid-answer is known dead in seconds, not at
the end of the step's whole time-out."""


class AnswerPublisher:
    def __init__(
        self,
        streams: AnswerStreams,
        run_id: str,
        step: str,
        step_no: int,
        attempt: int,
        *,
        every: float = 0.1,
        beat: Callable[[], None] = lambda: None,
        limit: int = MAX_ANSWER_CHARS,
    ) -> None:
        self._streams = streams
        self._key = (run_id, step, step_no, attempt)
        self._every = every
        self._beat = beat
        self._limit = limit
        self._over = False
        self._number: int | None = None
        self._known = ""
        self._sent = 0
        self._last = 0.0

    def answer_so_far(self, text: str) -> None:
        if self._over:
            return
        if len(text) > self._limit:
            self._abandon()
            return
        if text[: self._sent] != self._known[: self._sent]:
            return  # not what was written: wait for the reply to settle (``finish`` decides)
        self._known = text
        if time.monotonic() - self._last >= self._every:
            self._flush()

    def restart(self) -> None:
        """The next take opens a new stream, which supersedes this one."""
        self._number, self._known, self._sent, self._over = None, "", 0, False

    def finish(self, answer: str | None) -> None:
        """The call is over and ``answer`` is what the step decided (``None``: no answer)."""
        if answer is None or self._over:
            self._abandon()  # the text looked like an answer; the reply was not (or too long)
            return
        if not answer.startswith(self._known[: self._sent]):
            self.restart()
        if self._number is None:  # nothing streamed (or it went astray): the answer, whole
            if answer:
                self._streams.open_stream(*self._key, whole=answer)
            return
        self._known = answer
        self._flush()
        self._streams.close_stream(self._key[0], self._number, "done")

    def _abandon(self) -> None:
        if self._number is not None and not self._over:
            self._streams.close_stream(self._key[0], self._number, "abandoned")
        self._over = True

    def _flush(self) -> None:
        fresh = self._known[self._sent :]
        if not fresh:
            return
        run_id, step, step_no, attempt = self._key
        if self._number is None:
            self._number = self._streams.open_stream(run_id, step, step_no, attempt)
        self._streams.append_chunk(run_id, self._number, self._sent, fresh)
        self._sent = len(self._known)
        self._last = time.monotonic()
        self._beat()


@contextmanager
def heartbeating(every: float = ALIVE_EVERY) -> Iterator[None]:
    """Heartbeat the current activity every ``every`` seconds until the block ends: a model
    call blocks its thread, and it may not stream, yet its worker is alive all along."""
    stop = threading.Event()
    context = contextvars.copy_context()  # the activity's context, for another thread

    def beat() -> None:
        while not stop.wait(every):
            context.run(activity.heartbeat)

    ticker = threading.Thread(target=beat, name="model-step-heartbeat", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
