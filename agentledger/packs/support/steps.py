"""The support pack's model steps and token budget: what each step sees, calls and proposes.

``choose_next_action`` reads the request, the verified ids and a few read tools (the policy only
as an index), then proceeds to ``draft_answer``, which must cite policy once the order's status
is verified and may only propose the consequential tools (refund, message).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from agentledger.sdk import DEFAULT_TOKEN_BUDGET, RequirementRule, StepProfile, step

CHOOSE = step(
    "choose_next_action",
    next=["draft_answer"],
    tools=["get_order", "get_customer", "search_returns_policy"],
    sees=("record_index", "tool_result", "verified_fact"),
    index=("policy_passage",),
)

DRAFT = step(
    "draft_answer",
    proposes=["create_refund", "send_customer_message"],
    required_when=(
        RequirementRule(
            kind="policy_passage",
            when_fact="order_status",
            when_values=("delivered", "delivered_late", "in_transit"),
        ),
    ),
    sees=(
        "conversation_turn",
        "memory",
        "policy_passage",
        "record_index",
        "tool_result",
        "unresolved_error",
        "verified_fact",
    ),
    state=(
        "references",
        "verified_facts",
        "completed_actions",
        "pending_approvals",
        "unresolved_errors",
        "proposed_action",
        "rejected_options",
    ),
    current_date=True,
    principal_profile=True,
)

CHOOSE_NEXT_ACTION: StepProfile = CHOOSE.profile
DRAFT_ANSWER: StepProfile = DRAFT.profile

SUPPORT_STEP_PROFILES: Mapping[str, StepProfile] = MappingProxyType(
    {p.name: p for p in (CHOOSE_NEXT_ACTION, DRAFT_ANSWER)}
)

SUPPORT_BUDGET = DEFAULT_TOKEN_BUDGET
"""The support pack's 12,000-token table (seed 000's), split into the builder's five pools."""
