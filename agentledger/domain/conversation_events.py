"""A conversation's events: the agent's message awaiting a reply, the customer's message (held
when it arrives while the run works, under the profile's double-texting policy), a held message
taken to interrupt, a refused reply, and the close (``domain.fold`` applies them through
``_draft_replies``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from agentledger.domain.assertions import VerifiedAssertion
from agentledger.domain.envelope import Envelope


class ReplyAwaited(Envelope):
    """The run waits for its customer: to answer the agent's question (``reason="question"``)
    or, after an answer, for a follow-up (``"follow_up"``), until ``deadline``."""

    kind: Literal["reply_awaited"] = "reply_awaited"
    reason: Literal["question", "follow_up"]
    step: str
    message: str
    deadline: datetime


class UserReplied(Envelope):
    """The customer's message, from the run's requesting principal."""

    kind: Literal["user_replied"] = "user_replied"
    text: str
    principal_id: str
    reply_id: str
    assertion: VerifiedAssertion | None = None
    """The signed assertion that proved the sender (runs whose manifest pins trusted keys)."""
    queued: bool = False
    """Sent while the run was working, under a ``queue`` or ``interrupt`` double-texting
    policy: held (``WorkingState.queued_replies``) until the run asks or answers next, or, to
    interrupt, until its next safe point (``ReplyTaken``)."""


class ReplyRefused(Envelope):
    """A reply that was not taken (another principal, empty, too long, nobody waiting); audit."""

    kind: Literal["reply_refused"] = "reply_refused"
    attempted_by: str
    reason_code: str
    detail: str


class ConversationClosed(Envelope):
    """No message came within the conversation's idle timeout; the run ends politely."""

    kind: Literal["conversation_closed"] = "conversation_closed"
    reason: Literal["idle_timeout", "max_turns"]
    message: str


class ReplyTaken(Envelope):
    """An interrupting message is taken at the run's next safe point: what the run had decided
    and not yet done is set aside, and its next step, from the graph's entry, reads the message."""

    kind: Literal["reply_taken"] = "reply_taken"
    reply_seq: int
    """The held ``user_replied`` event's seq (the oldest held message)."""
