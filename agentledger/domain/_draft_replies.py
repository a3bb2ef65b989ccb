"""The fold's handlers for a conversation: the agent's message awaiting a reply, the customer's
reply (its assertion's token id spent, ``domain.assertions.spent_after``), a refused reply, and
the close. Private to ``domain.fold``, like ``_draft``, whose ``Draft`` they apply to."""

from __future__ import annotations

from agentledger.domain._draft import Draft
from agentledger.domain.assertions import spent_after
from agentledger.domain.errors import InconsistentEvent
from agentledger.domain.events import ConversationClosed, ReplyAwaited, ReplyRefused, UserReplied
from agentledger.domain.state import AwaitedReply, Turn


def apply_conversation(
    d: Draft, event: ReplyAwaited | UserReplied | ReplyRefused | ConversationClosed
) -> None:
    match event:
        case ReplyAwaited():
            _reply_awaited(d, event)
        case UserReplied():
            _user_replied(d, event)
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
