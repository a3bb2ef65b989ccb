"""The fold's handlers for a conversation: the agent's message awaiting a reply, the customer's
reply (its assertion's token id spent, ``domain.assertions.spent_after``), a refused reply, and
the close. Private to ``domain.fold``, like ``_draft``, whose ``Draft`` they apply to."""

from __future__ import annotations

from agentledger.domain._draft import Draft
from agentledger.domain.assertions import spent_after
from agentledger.domain.errors import InconsistentEvent
from agentledger.domain.events import (
    ConversationClosed,
    ReplyAwaited,
    ReplyRefused,
    ReplyTaken,
    UserReplied,
)
from agentledger.domain.state import AwaitedReply, Turn


def apply_conversation(
    d: Draft, event: ReplyAwaited | UserReplied | ReplyRefused | ConversationClosed | ReplyTaken
) -> None:
    match event:
        case ReplyAwaited():
            _reply_awaited(d, event)
        case UserReplied() if event.queued:
            _held(d, event)
        case UserReplied():
            _user_replied(d, event)
        case ReplyTaken():
            _interrupted(d, event)
        case ReplyRefused():
            d.f["reply_refusals"] += 1
        case ConversationClosed():
            d.f["awaiting"] = None


def _reply_awaited(d: Draft, event: ReplyAwaited) -> None:
    """The agent's message (a question, or an answer open to follow-ups) and the wait for the
    customer's."""
    if d.f["awaiting"] is not None:
        raise InconsistentEvent("reply_awaited while already awaiting a reply")
    d.f["awaiting"] = AwaitedReply.trusted(
        seq=event.seq, reason=event.reason, step=event.step, deadline=event.deadline
    )
    d.f["conversation"].append(
        Turn.trusted(seq=event.seq, role="agent", text=event.message, at=event.recorded_at)
    )
    if d.f["queued_replies"]:  # a message sent while the run worked answers at once
        _take_held(d, awaited=d.f["awaiting"])


def _held(d: Draft, event: UserReplied) -> None:
    """A message sent while the run worked: its assertion is spent now; it waits its turn."""
    if d.f["awaiting"] is not None:
        raise InconsistentEvent("a held message while a reply was awaited")
    f = d.f
    f["spent_assertions"] = spent_after(f["spent_assertions"], event.assertion, event.recorded_at)
    held = Turn.trusted(seq=event.seq, role="user", text=event.text, at=event.recorded_at)
    f["queued_replies"] = (*f["queued_replies"], held)


def _take_held(d: Draft, awaited: AwaitedReply | None) -> None:
    """The oldest held message enters the conversation as the customer's reply (to ``awaited``;
    ``None``: an interruption, which, like a follow-up, starts again from the entry)."""
    f = d.f
    first, *rest = f["queued_replies"]
    f["queued_replies"] = tuple(rest)
    f["awaiting"] = None
    if awaited is None or awaited.reason == "follow_up":
        f["at_step"] = None
    f["conversation"].append(first)


def _interrupted(d: Draft, event: ReplyTaken) -> None:
    """What the run decided and had not done is set aside; the message is taken."""
    queued = d.f["queued_replies"]
    if not queued or queued[0].seq != event.reply_seq or d.f["awaiting"] is not None:
        raise InconsistentEvent(f"reply_taken #{event.reply_seq}: not the oldest held message")
    d.f["proposed_action"] = None
    d.f["phase"] = "gathering"
    _take_held(d, awaited=None)


def _user_replied(d: Draft, event: UserReplied) -> None:
    """The customer's message. A reply to a question resumes the step that asked; a follow-up
    after an answer starts again from the graph's entry."""
    awaited = d.f["awaiting"]
    if awaited is None:
        raise InconsistentEvent("user_replied while no reply was awaited")
    d.f["awaiting"] = None
    f = d.f
    f["spent_assertions"] = spent_after(f["spent_assertions"], event.assertion, event.recorded_at)
    if awaited.reason == "follow_up":
        d.f["at_step"] = None
    d.f["conversation"].append(
        Turn.trusted(seq=event.seq, role="user", text=event.text, at=event.recorded_at)
    )
