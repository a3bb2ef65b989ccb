"""How long a run's request may be: what every step that needs it can hold, known before it starts.

The request is a required item of the working-state pool (the builder reserves it there first,
beside the working-state block), so a request larger than what that pool leaves it in the
smallest one of the agent's steps cannot be sent: the run would fail a step as
``insufficient_context``. It is refused before the run starts
instead, with the limit. Pure: the token counter is an argument.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agentledger.domain.context.candidates import request_item
from agentledger.domain.context.render import render_item
from agentledger.domain.context.tokens import TokenCounter
from agentledger.domain.manifest import AgentProfile
from agentledger.domain.workorder import WorkOrder

MAX_REQUEST_CHARS = 4_000
"""The longest request the API's schema admits: the shipped packs' limit (1,000 tokens) in
ordinary prose, about four characters a token. The token count decides exactly, before the
run starts, for text that tokenises more densely."""
STATE_VIEW_SHARE = 3
"""The working-state block (references, verified facts, completed actions, pending approvals,
budget, the date) shares the request's pool and grows as the run goes; it compacts to its
latest receipts when short, and a third of the pool is kept for it."""


def request_tokens_allowed(profile: AgentProfile) -> int:
    """What is left for the request of the smallest working-state pool among the steps that
    require it, once ``STATE_VIEW_SHARE`` of it is kept for the working-state block."""
    pools = [
        profile.token_budget.with_sections(step.section_tokens).sections["working_state"].tokens
        for step in profile.step_profiles
        if "user_request" in step.required_kinds
    ]
    pool = min(pools, default=profile.token_budget.sections["working_state"].tokens)
    return pool - pool // STATE_VIEW_SHARE


def request_problem(
    work_order: WorkOrder, profile: AgentProfile, counter: TokenCounter
) -> str | None:
    """Why ``work_order``'s request is refused before its run starts (``None``: it is not):
    empty, or larger than every step that needs it can hold."""
    if not work_order.request_text.strip():
        return "the request is empty"
    allowed = request_tokens_allowed(profile)
    # The item exactly as the run will hold it (its id and time do not change its size much;
    # the epoch keeps this pure).
    item = request_item("run_000000000000", work_order, datetime(1970, 1, 1, tzinfo=UTC))
    tokens = counter.count(render_item(item, plain=False))
    if tokens <= allowed:
        return None
    return (
        f"the request is too long for pack {work_order.pack}: {tokens} tokens as sent, and its "
        f"steps hold at most {allowed} (about {allowed * 4} characters of ordinary prose); "
        "shorten it"
    )
