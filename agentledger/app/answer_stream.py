"""Following a run's answer while it is written: what ``run --follow`` and the stream API send.

``AnswerFollower`` reads the run's newest answer stream from where its reader is and says what
is new: ``token`` (more text, at its offset) or ``reset`` (what was shown is void: the step was
retried, a later step answers instead, or the reply was no answer after all). A reader only ever
shows the newest stream, so it never glues half of one take to another. The recorded answer
remains the truth: a follower says what the model is saying, the run's end what it said.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agentledger.activities.ledger import AnswerStream, Ledger

POLL_SECONDS = 0.1
ResetReason = Literal["retried", "next_step", "rejected", "replaced"]


@dataclass(frozen=True)
class Said:
    kind: Literal["token", "reset"]
    stream: int
    offset: int = 0
    text: str = ""
    reason: ResetReason | None = None
    status: str = ""
    """The stream's status when read (``AnswerStream.status``): ``open`` while it is written."""

    @property
    def event_id(self) -> str:
        """Where a reader resumes after this (``Last-Event-ID``): ``stream:offset``."""
        return f"{self.stream}:{self.offset + len(self.text)}"


class AnswerFollower:
    def __init__(self, ledger: Ledger, run_id: str, resume_at: str | None = None) -> None:
        self._ledger = ledger
        self._run_id = run_id
        self._number, self._offset = _position(resume_at)
        self._step_no: int | None = None
        self._void_told = False

    @property
    def shown(self) -> bool:
        """Whether any text of the current stream was said."""
        return self._offset > 0

    def poll(self) -> list[Said]:
        """What is new since the last poll (blocking: one or two indexed reads)."""
        read = self._ledger.read_stream(self._run_id, self._number, self._offset)
        stream, said = read.stream, list[Said]()
        if stream is None:
            return said
        if stream.number != self._number:
            if self._number and (self.shown or self._step_no is None):
                said.append(Said("reset", stream.number, reason=self._why(stream)))
            self._number, self._step_no, self._void_told = stream.number, stream.step_no, False
            self._offset = 0
        if read.text:
            said.append(Said("token", stream.number, read.offset, read.text, status=stream.status))
            self._offset = read.offset + len(read.text)
        if stream.status == "abandoned" and self.shown and not self._void_told:
            said.append(Said("reset", stream.number, reason="rejected"))
            self._void_told = True
        return said

    async def follow(self, tell: Callable[[Said], None]) -> None:
        """Tell each new piece as it comes, until cancelled."""
        while True:
            for piece in await asyncio.to_thread(self.poll):
                tell(piece)
            await asyncio.sleep(POLL_SECONDS)

    def _why(self, stream: AnswerStream) -> ResetReason:
        if self._step_no is None:
            return "replaced"  # resumed from an id: the step it was in is not known
        return "retried" if stream.step_no == self._step_no else "next_step"


def _position(resume_at: str | None) -> tuple[int, int]:
    """``stream:offset`` from a ``Last-Event-ID``; anything else starts from the beginning."""
    number, _, offset = (resume_at or "").partition(":")
    if number.isdigit() and offset.isdigit():
        return int(number), int(offset)
    return 0, 0
