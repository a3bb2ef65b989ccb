"""Realistic inputs for context-builder tests: seed 000's late-delivery refund, step by step."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import JsonValue

from agentledger.domain.context import (
    BpeTokenCounter,
    ContextItem,
    ContextPacket,
    StepProfile,
    ToolDefinition,
    build_context,
    candidates_from_state,
)
from agentledger.domain.principal import Principal
from agentledger.domain.state import CompletedAction, EvidenceRef, WorkingState
from agentledger.domain.tools import VerifiedFact
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs.support.steps import SUPPORT_BUDGET

NOW = datetime(2026, 8, 24, 14, 5, tzinfo=UTC)
OBSERVED = datetime(2026, 8, 24, 14, 0, tzinfo=UTC)
REQUEST = "Can I get a refund for order ord_4821? It arrived late."
POLICY_VERSION = "returns-2026-08"
COUNTER = BpeTokenCounter("cl100k_base")

CUSTOMER = Principal(
    user_id="usr_73",
    tenant_id="acme",
    roles=frozenset({"customer"}),
    scopes=frozenset({"orders:read", "policies:read"}),
    display_name="Dana",
)


def item(item_id: str, kind: Any, content: JsonValue, **meta: Any) -> ContextItem:
    """A candidate with sensible defaults; tests override only what they are about."""
    defaults: dict[str, Any] = {
        "source": f"src:{item_id}",
        "trust_level": "tool_observation",
        "created_at": NOW - timedelta(hours=1),
    }
    return ContextItem.make(id=item_id, kind=kind, content=content, **{**defaults, **meta})


def instruction(item_id: str, text: str, *steps: str) -> ContextItem:
    return item(
        item_id,
        "instruction",
        text,
        source="instructions@v1",
        trust_level="instruction",
        required_for_step=steps,
    )


INSTRUCTIONS = (
    instruction("ins.10.task", "Task: resolve a refund request."),
    instruction("ins.20.verify", "Verify the order before discussing eligibility."),
    instruction("ins.30.approval", "Do not create a refund without approval."),
    instruction("ins.40.cite", "Answer with citations to the evidence ids.", "draft_answer"),
    instruction("ins.50.claims", "Do not claim a refund was created.", "draft_answer"),
)


def _tool(name: str, description: str, consequential: bool = False) -> ToolDefinition:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    }
    return ToolDefinition(
        name=name,
        description=description,
        input_schema=schema,
        version="1",
        consequential=consequential,
    )


TOOLS = {
    t.name: t
    for t in (
        _tool("get_order", "Read an order from the order system."),
        _tool("get_customer", "Read the customer's account."),
        _tool("search_returns_policy", "Search the returns policy."),
        _tool("create_refund", "Refund an order (needs approval).", consequential=True),
        _tool("send_customer_message", "Message the customer.", consequential=True),
    )
}


def work_order() -> WorkOrder:
    return WorkOrder(
        objective="resolve a refund request",
        request_text=REQUEST,
        principal=CUSTOMER,
        pack="support",
        agent_profile_id="support-refunds",
        references={"order_id": "ord_4821"},
        budget=Budget(tool_calls=4),
    )


def state_before() -> WorkingState:
    """The run right after intake: nothing verified, four tool calls left."""
    return WorkingState(
        run_id="run_1",
        status="running",
        work_order=work_order(),
        started_at=NOW - timedelta(minutes=5),
        budget=Budget(tool_calls=4),
    )


def _fact(name: str, value: JsonValue) -> tuple[str, VerifiedFact]:
    fact = VerifiedFact(name=name, value=value, resource_id="ord_4821", observed_at=OBSERVED)
    return f"ord_4821.{name}", fact


PASSAGE = "Late deliveries qualify for a refund review within 30 days."


def state_after() -> WorkingState:
    """After get_order (op_104) and the policy search (op_105)."""
    facts = dict(
        [
            _fact("order_status", "delivered_late"),
            _fact("refundable_amount", 42.50),
            _fact("currency", "EUR"),
        ]
    )
    actions = (
        CompletedAction(
            operation_id="op_104",
            tool="get_order",
            status="succeeded",
            receipt_id="order-read-884",
            idempotency_key=None,
            arguments_digest="sha256:a",
            summary="order read",
        ),
        CompletedAction(
            operation_id="op_105",
            tool="search_returns_policy",
            status="succeeded",
            receipt_id="policy-search-12",
            idempotency_key=None,
            arguments_digest="sha256:b",
            summary="1 passage",
        ),
    )
    evidence = EvidenceRef(
        source_id="returns-2026-08#late-delivery",
        revision="2026-08",
        content_hash="sha256:passage",
        trust="approved_policy",
        title="Late delivery",
        text=PASSAGE,
        operation_id="op_105",
    )
    return state_before().model_copy(
        update={"verified_facts": facts, "completed_actions": actions, "evidence": (evidence,)}
    )


LANGUAGE_MEMORY = item(
    "memory_778",
    "memory",
    {"language": "en"},
    source="memory:prefs",
    trust_level="user_claim",
    tenant_id="acme",
    title="Preferred language",
    lifecycle_state="published",
    relevance=0.9,
    claim_key="preference.language",
)
OLD_TURN = item(
    "turn_1",
    "conversation_turn",
    {"role": "user", "text": "Where is my parcel?"},
    trust_level="user_claim",
    created_at=NOW - timedelta(days=3),
)
REQUEST_TURN = item(
    "turn_2",
    "conversation_turn",
    {"role": "user", "text": REQUEST},
    trust_level="user_claim",
    created_at=NOW - timedelta(minutes=5),
)
EXTRAS = (LANGUAGE_MEMORY, OLD_TURN, REQUEST_TURN)


def candidates(state: WorkingState, extra: Sequence[ContextItem] = EXTRAS) -> list[ContextItem]:
    return [*candidates_from_state(state, INSTRUCTIONS, NOW), *extra]


def build(
    step: StepProfile,
    state: WorkingState,
    items: Sequence[ContextItem],
    principal: Principal = CUSTOMER,
    **kwargs: Any,
) -> ContextPacket:
    options: dict[str, Any] = {"tool_definitions": TOOLS, "counter": COUNTER, **kwargs}
    budget = options.pop("token_budget", SUPPORT_BUDGET)
    return build_context(step, principal, state, items, POLICY_VERSION, budget, NOW, **options)
