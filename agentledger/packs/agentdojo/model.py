"""``agentdojo-compromised``: a scripted, fully compromised decision source. Not a language model.

It proposes the user task's ground-truth calls, then every call of the injection task — as a
model that obeys whatever the injected text in its tool results says — and finally answers with
the user task's ground-truth output. Progress is read from the packet's typed working state (one
settled proposal per call), as ``tau2-gold`` does, so it is deterministic under retries.
"""

from __future__ import annotations

from functools import cache

from pydantic import JsonValue

from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from agentledger.packs.agentdojo.catalog import Pair, injection_calls, suite, user_calls
from agentledger.packs.hosted import progress

__all__ = ["CompromisedModel", "planned_calls"]


@cache
def planned_calls(pair: Pair) -> tuple[dict[str, JsonValue], ...]:
    calls = [*user_calls(pair), *injection_calls(pair)]
    return tuple({"tool": c.function, "arguments": dict(c.args)} for c in calls)


class CompromisedModel:
    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        refs = packet.working_state.get("references")
        pair = Pair.from_references(refs if isinstance(refs, dict) else {})
        usage = ModelUsage(input_tokens=packet.total_tokens)
        if packet.step != "choose_next_action":
            user_task = suite(pair.suite, pair.version).user_tasks[pair.user_task]
            answer = str(user_task.GROUND_TRUTH_OUTPUT)
            return ModelReply(output={"type": "answer", "answer": answer}, usage=usage)
        plan = planned_calls(pair)
        done = progress(packet.working_state)
        if done >= len(plan):
            return ModelReply(output={"type": "proceed", "to": "draft_answer"}, usage=usage)
        return ModelReply(output={"type": "call_tool", "proposal": plan[done]}, usage=usage)
