"""``tau2-gold``: a scripted decision source that proposes a τ² task's gold actions, in order.

Not a language model. It reads only its context packet: the task comes from the work order's
references, and how far the run has got from the packet's typed working state — every proposal
ends as exactly one completed action (succeeded or failed receipt) or one rejected option
(denied, rejected by an approver, malformed), so their count is the index of the next gold action.
That makes it deterministic under activity retries and worker crashes.
"""

from __future__ import annotations

from pydantic import JsonValue

from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from agentledger.packs.hosted import progress
from agentledger.packs.tau2.catalog import Domain, checked_domain, gold_actions

__all__ = ["GoldActionModel", "progress"]


class GoldActionModel:
    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        refs = packet.working_state.get("references")
        refs = refs if isinstance(refs, dict) else {}
        usage = ModelUsage(input_tokens=packet.total_tokens)
        actions = gold_actions(_domain(refs.get("tau2_domain")), str(refs.get("tau2_task")))
        done = progress(packet.working_state)
        if packet.step != "choose_next_action":
            answer = f"Completed {done} of {len(actions)} planned actions."
            return ModelReply(output={"type": "answer", "answer": answer}, usage=usage)
        if done >= len(actions):
            output: dict[str, JsonValue] = {
                "type": "proceed",
                "to": "draft_answer",
                "rationale": "all done",
            }
            return ModelReply(output=output, usage=usage)
        action = actions[done]
        proposal: dict[str, JsonValue] = {"tool": action.tool, "arguments": action.arguments}
        return ModelReply(
            output={"type": "call_tool", "proposal": proposal, "rationale": f"gold #{done}"},
            usage=usage,
        )


def _domain(value: JsonValue) -> Domain:
    return checked_domain(value)
