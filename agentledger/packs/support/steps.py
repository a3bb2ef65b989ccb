"""The support pack's model steps and token budget: what each step sees, calls and proposes.

``choose_next_action`` reads the request, the verified ids and a few read tools (the policy only
as an index); ``draft_answer`` must cite policy once the order's status is verified and may only
propose the consequential tools (refund, message). The types are ``agentledger.domain.context``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from agentledger.domain.context import SEED_TOKEN_BUDGET, RequirementRule, StepProfile

CHOOSE_NEXT_ACTION = StepProfile(
    name="choose_next_action",
    required_kinds=("instruction", "user_request"),
    optional_kinds=("record_index", "tool_result", "verified_fact"),
    index_kinds=("policy_passage",),
    state_fields=(
        "references",
        "verified_facts",
        "completed_actions",
        "pending_approvals",
        "remaining_budget",
        "rejected_options",
        "unresolved_errors",
    ),
    allowed_tools=("get_order", "get_customer", "search_returns_policy"),
    output_schema="next_action",
)

DRAFT_ANSWER = StepProfile(
    name="draft_answer",
    required_kinds=("instruction", "user_request"),
    conditional_kinds=(
        RequirementRule(
            kind="policy_passage",
            when_fact="order_status",
            when_values=("delivered", "delivered_late", "in_transit"),
        ),
    ),
    optional_kinds=(
        "conversation_turn",
        "memory",
        "policy_passage",
        "record_index",
        "tool_result",
        "unresolved_error",
        "verified_fact",
    ),
    state_fields=(
        "references",
        "verified_facts",
        "completed_actions",
        "pending_approvals",
        "unresolved_errors",
        "proposed_action",
        "rejected_options",
    ),
    proposable_actions=("create_refund", "send_customer_message"),
    output_schema="answer",
    inject_current_date=True,
    inject_principal_profile=True,
)

SUPPORT_STEP_PROFILES: Mapping[str, StepProfile] = MappingProxyType(
    {p.name: p for p in (CHOOSE_NEXT_ACTION, DRAFT_ANSWER)}
)

SUPPORT_BUDGET = SEED_TOKEN_BUDGET
"""The support pack's 12,000-token table (seed 000's), split into the builder's five pools."""
