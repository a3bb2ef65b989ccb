"""A small conversational pack, declared through ``agentledger.sdk`` as a user would.

It asks which colour the customer wants until a message names one, then answers with it; a
follow-up that names another colour starts again at the entry step. ``CHAT_CAN`` is the same pack
with a tiny compaction policy, so it continues as new after almost every turn; ``CHAT_LONG``
takes the 250 turns ``bench.conversation`` sends; ``CHAT_QUEUE`` and ``CHAT_INTERRUPT`` hold or
take a message sent while the run works (``RESPONDING`` holds it working). Tests and
benchmarks register them on import.
"""

from __future__ import annotations

import re
import threading
from dataclasses import replace

from agentledger.app.registry import register_pack
from agentledger.domain.graph import DoubleTexting
from agentledger.domain.manifest import CompactionPolicy
from agentledger.sdk import (
    AgentPack,
    Budget,
    ConversationPolicy,
    Pack,
    PacketView,
    Principal,
    ScriptedModel,
    answer,
    ask_user,
    proceed,
    step,
)

IDLE_SECONDS = 6
DEFAULT = ("instruction", "user_request")
QUESTION = "Which colour would you like: red, green or blue?"
_COLOUR = re.compile(r"\b(red|green|blue)\b", re.IGNORECASE)


def chosen(view: PacketView) -> str | None:
    """The colour named in the customer's latest message that names one."""
    for text in reversed(view.user_texts()):
        if (match := _COLOUR.search(text)) is not None:
            return match.group(1).lower()
    return None


def _understand(view: PacketView) -> dict[str, object]:
    if chosen(view) is None:
        return ask_user(QUESTION)
    return proceed("respond", rationale="the colour is known")


RESPONDING = threading.Event()
"""Cleared by a test to hold the ``respond`` step's model call: the run is then working, so a
message sent meanwhile meets the pack's double-texting policy. Set (no hold) by default."""
RESPONDING.set()


def _respond(view: PacketView) -> dict[str, object]:
    RESPONDING.wait(timeout=30)
    return answer(f"You chose {chosen(view)}.")


SCRIPT = ScriptedModel("chat-script", {"understand": _understand, "respond": _respond})  # type: ignore[dict-item]

CUSTOMER = Principal(user_id="usr_chat", tenant_id="t_chat", roles=frozenset({"customer"}))
STRANGER = Principal(user_id="usr_other", tenant_id="t_chat", roles=frozenset({"customer"}))
OPERATOR = Principal(
    user_id="op_chat", tenant_id="t_chat", roles=frozenset({"canceller", "steerer"})
)


def chat_pack(
    name: str,
    *,
    history_events: int | None = None,
    max_turns: int = 50,
    strict: bool = False,
    double_texting: DoubleTexting = "reject",
) -> Pack:
    """The pack as ``name``; ``history_events``: continue as new past that many events;
    ``strict``: ``understand`` requires a conversation turn, and asks for one when the context
    has none (its ``on_insufficient_context``) instead of failing; ``double_texting``: what a
    message sent while the run works does."""
    understand = step(
        "understand",
        next=["respond"],
        ask_user=True,
        sees=("conversation_turn",),
        required=("instruction", "user_request", "conversation_turn") if strict else DEFAULT,
        on_insufficient_context="ask_user" if strict else "fail",
    )
    declared = AgentPack(
        name,
        version="0.1.0",
        objective="choose a colour",
        instructions=["Ask which colour the customer wants until they say; then confirm it."],
        model=SCRIPT.profile,
        models=[SCRIPT],
        steps=[
            understand,
            step("respond", sees=("conversation_turn",)),
        ],
        conversation=ConversationPolicy(
            idle_timeout_seconds=IDLE_SECONDS, max_turns=max_turns, double_texting=double_texting
        ),
        principals=[CUSTOMER, STRANGER, OPERATOR],
        budget=Budget(steps=4 * max_turns + 10, tool_calls=6, tokens=50_000 * max_turns),
    )
    pack = declared.build()
    if history_events is None:
        return pack
    compaction = CompactionPolicy(max_history_events=history_events)
    return replace(pack, profile=pack.profile.model_copy(update={"compaction": compaction}))


CHAT = chat_pack("chat")
CHAT_CAN = chat_pack("chat_can", history_events=40)
CHAT_LONG = chat_pack("chat_long", history_events=400, max_turns=250)
CHAT_STRICT = chat_pack("chat_strict", strict=True)
CHAT_QUEUE = chat_pack("chat_queue", double_texting="queue")
CHAT_INTERRUPT = chat_pack("chat_interrupt", double_texting="interrupt")

for _pack in (CHAT, CHAT_CAN, CHAT_LONG, CHAT_STRICT, CHAT_QUEUE, CHAT_INTERRUPT):
    register_pack(_pack.name, f"{__name__}:{_pack.name.upper()}")
