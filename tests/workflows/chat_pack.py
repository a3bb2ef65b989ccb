"""A small conversational pack, declared through ``agentledger.sdk`` as a user would.

It asks which colour the customer wants until a message names one, then answers with it; a
follow-up that names another colour starts again at the entry step. ``CHAT_CAN`` is the same pack
with a tiny compaction policy, so it continues as new after almost every turn.
"""

from __future__ import annotations

import re
from dataclasses import replace

from agentledger.domain.manifest import CompactionPolicy
from agentledger.registry import register_pack
from agentledger.sdk import (
    AgentPack,
    Budget,
    ConversationPolicy,
    PacketView,
    Principal,
    ScriptedModel,
    WorkOrder,
    answer,
    ask_user,
    proceed,
    step,
)

IDLE_SECONDS = 6
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


def _respond(view: PacketView) -> dict[str, object]:
    return answer(f"You chose {chosen(view)}.")


SCRIPT = ScriptedModel("chat-script", {"understand": _understand, "respond": _respond})  # type: ignore[dict-item]

CUSTOMER = Principal(user_id="usr_chat", tenant_id="t_chat", roles=frozenset({"customer"}))
STRANGER = Principal(user_id="usr_other", tenant_id="t_chat", roles=frozenset({"customer"}))

_pack = AgentPack(
    "chat",
    version="0.1.0",
    objective="choose a colour",
    instructions=["Ask which colour the customer wants until they say; then confirm it."],
    model=SCRIPT.profile,
    models=[SCRIPT],
    steps=[
        step("understand", next=["respond"], ask_user=True, sees=("conversation_turn",)),
        step("respond", sees=("conversation_turn",)),
    ],
    conversation=ConversationPolicy(idle_timeout_seconds=IDLE_SECONDS, max_turns=50),
    principals=[CUSTOMER, STRANGER],
    budget=Budget(steps=400, tool_calls=6, tokens=2_000_000),
)
CHAT = _pack.build()


def _variant_work_order(request: str, principal: Principal) -> WorkOrder:
    return CHAT.make_work_order(request, principal).model_copy(update={"pack": "chat_can"})


CHAT_CAN = replace(
    CHAT,
    name="chat_can",
    profile=CHAT.profile.model_copy(
        update={"compaction": CompactionPolicy(max_history_events=40, max_history_bytes=4_000_000)}
    ),
    make_work_order=_variant_work_order,
)

register_pack("chat", f"{__name__}:CHAT")
register_pack("chat_can", f"{__name__}:CHAT_CAN")
