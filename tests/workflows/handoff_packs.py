"""Test packs built from ``support_reviewed``, each breaking one term of the fraud-check handoff.

- ``handoff_sloppy``: the reviewer answers ``{"verdict": "maybe"}``: output that fails the schema.
- ``handoff_greedy``: the reviewer first tries ``create_refund``, outside its authority.
- ``handoff_tight``: the contract allows the child one step: it exceeds its budget.
- ``handoff_wide``: the contract grants the child a tool the parent does not hold.
- ``handoff_refunder``: the child may refund (within the parent's grants) and proposes one, so it
  waits on an approval (for cancelling the parent while it waits).
- ``handoff_slow``: the same child under a contract that ends it after two seconds.

Registered with ``register_pack`` before a harness builds its worker (which collects models).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import JsonValue

from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.app.registry import register_pack
from agentledger.domain.context import ContextPacket, StepProfile
from agentledger.domain.handoffs import HandoffContract
from agentledger.domain.manifest import AgentProfile, ModelProfile, ToolGrant
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support import PACK as SUPPORT
from agentledger.packs.support.review import (
    FRAUD_CHECK,
    FRAUD_REVIEW_PROFILE,
    REVIEWED_PROFILE,
    FraudReviewer,
)
from agentledger.packs.support.review import PACK as REVIEWED

CREATE_REFUND = SUPPORT.tools["create_refund"].contract

__all__ = ["GREEDY", "REFUNDER", "SLOPPY", "SLOW", "TIGHT", "WIDE", "register"]


def _model(name: str) -> ModelProfile:
    return ModelProfile(name=name, provider=name, model=f"{name}-v1", encoding="cl100k_base")


def _variant(
    name: str,
    *,
    contract: HandoffContract = FRAUD_CHECK,
    child: AgentProfile = FRAUD_REVIEW_PROFILE,
    models: dict[str, object] | None = None,
) -> Pack:
    def make_work_order(request: str, principal: Principal) -> WorkOrder:
        return REVIEWED.make_work_order(request, principal).model_copy(update={"pack": name})

    parent = REVIEWED_PROFILE.model_copy(update={"handoffs": (contract,)})
    return replace(
        REVIEWED,
        name=name,
        profile=parent,
        profiles={child.profile_id: child},
        models={**REVIEWED.models, **(models or {})},  # type: ignore[dict-item]
        make_work_order=make_work_order,
    )


class SloppyReviewer:
    """Reads like the real reviewer, then answers outside the output schema."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        reply = FraudReviewer().decide(packet, profile)
        if packet.step == "verdict":
            output: dict[str, JsonValue] = {"type": "answer", "answer": '{"verdict": "maybe"}'}
            return ModelReply(output=output, usage=reply.usage)
        return reply


class GreedyReviewer:
    """Tries to refund first (outside its authority), then reviews as the real one does."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        rejected = packet.working_state.get("rejected_options")
        tried = isinstance(rejected, list) and any(
            isinstance(r, dict) and r.get("option") == "create_refund" for r in rejected
        )
        if packet.step == "gather" and not tried:
            arguments: dict[str, JsonValue] = {
                "order_id": "ord_4821",
                "amount": 42.5,
                "currency": "EUR",
                "reason": "late delivery",
            }
            output: dict[str, JsonValue] = {
                "type": "call_tool",
                "proposal": {"tool": "create_refund", "arguments": arguments},
            }
            return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))
        return FraudReviewer().decide(packet, profile)


class RefundingChild:
    """Reads the order, then proposes the refund itself: the child waits on an approval."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        if packet.step == "gather":
            return FraudReviewer().decide(packet, profile)
        proposal: dict[str, JsonValue] = {
            "tool": "create_refund",
            "arguments": {
                "order_id": "ord_4821",
                "amount": 42.5,
                "currency": "EUR",
                "reason": "late delivery",
            },
        }
        output: dict[str, JsonValue] = {
            "type": "answer",
            "answer": "proposing the refund",
            "proposed_next_action": proposal,
        }
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


SLOPPY = _variant(
    "handoff_sloppy",
    child=FRAUD_REVIEW_PROFILE.model_copy(update={"model": _model("sloppy_review")}),
    models={"sloppy_review": SloppyReviewer()},
)
GREEDY = _variant(
    "handoff_greedy",
    contract=FRAUD_CHECK.model_copy(
        update={
            "budget": Budget(steps=6),
            "termination": FRAUD_CHECK.termination.model_copy(update={"max_steps": 6}),
        }
    ),
    child=FRAUD_REVIEW_PROFILE.model_copy(
        update={"model": _model("greedy_review"), "budgets": Budget(steps=6, wall_seconds=600)}
    ),
    models={"greedy_review": GreedyReviewer()},
)
TIGHT = _variant(
    "handoff_tight", contract=FRAUD_CHECK.model_copy(update={"budget": Budget(steps=1)})
)
WIDE = _variant(
    "handoff_wide",
    contract=FRAUD_CHECK.model_copy(
        update={"authority": ("get_order", "get_customer", "close_account")}
    ),
)
_VERDICT = FRAUD_REVIEW_PROFILE.step_profiles[1]
REFUNDER = _variant(
    "handoff_refunder",
    contract=FRAUD_CHECK.model_copy(
        update={"authority": ("get_order", "get_customer", "create_refund"), "gates": ()}
    ),
    child=FRAUD_REVIEW_PROFILE.model_copy(
        update={
            "model": _model("refunding_child"),
            "tool_grants": (
                *FRAUD_REVIEW_PROFILE.tool_grants,
                ToolGrant.of(CREATE_REFUND, ["verdict"]),
            ),
            "step_profiles": (
                FRAUD_REVIEW_PROFILE.step_profiles[0],
                StepProfile(
                    **{
                        **_VERDICT.model_dump(),
                        "proposable_actions": ("create_refund",),
                    }
                ),
            ),
        }
    ),
    models={"refunding_child": RefundingChild()},
)

SLOW = _variant(
    "handoff_slow",
    contract=REFUNDER.profile.handoffs[0].model_copy(
        update={"termination": FRAUD_CHECK.termination.model_copy(update={"max_seconds": 2})}
    ),
    child=REFUNDER.profiles[FRAUD_REVIEW_PROFILE.profile_id],
)


def register() -> None:
    """Make the variants available to this process's worker (idempotent)."""
    for attribute in __all__[:-1]:
        pack = globals()[attribute]
        register_pack(pack.name, f"{__name__}:{attribute}")
