"""``playbook``: a scripted, deterministic policy standing in for a model, offline.

It is honest about what it is: a hand-written decision table for the support pack, used for the
demo, tests and benchmarks. It reads only the context packet it is given (never the database or
the run's state directly), so a different packet gives a different decision: no refund proposal
without a late delivery, without verified facts, or without the policy evidence in the packet.
"""

from __future__ import annotations

from pydantic import JsonValue

from agentledger.sdk import ContextPacket, ModelProfile, ModelReply, ModelUsage, PacketItem

_POLICY_QUERIES = {
    "delivered_late": "late delivery refund eligibility",
    "delivered": "change of mind return unused items",
    "in_transit": "orders in transit refund",
}
_ANCHORS = {
    "delivered_late": "#late-delivery",
    "delivered": "#change-of-mind",
    "in_transit": "#in-transit",
}


class _View:
    """Typed reading of the packet's working-state section."""

    def __init__(self, packet: ContextPacket) -> None:
        ws = packet.working_state
        self.packet = packet
        self.order_id = _str(_dict(ws.get("references")).get("order_id"))
        self.facts = {k: _dict(v).get("value") for k, v in _dict(ws.get("verified_facts")).items()}
        self.completed = [_dict(a) for a in _list(ws.get("completed_actions"))]
        self.errors = [_dict(e) for e in _list(ws.get("unresolved_errors"))]
        self.rejected = [_dict(r) for r in _list(ws.get("rejected_options"))]

    def fact(self, name: str) -> JsonValue:
        return self.facts.get(f"{self.order_id}.{name}")

    def result_of(self, action: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """What a completed call's receipt showed the model (its tool result in the packet)."""
        wanted = f"obs:{action.get('operation_id')}"
        items = (i for s in self.packet.sections for i in s.items if i.kind == "tool_result")
        return next((_dict(i.content) for i in items if i.id == wanted), {})

    def done(self, tool: str, about: str | None = None) -> dict[str, JsonValue] | None:
        """The first completed call of ``tool``; with ``about``, of one about that resource (a
        call recorded before runs kept their resource was about the run's one order)."""
        return next(
            (
                a
                for a in self.completed
                if a.get("tool") == tool and (about is None or a.get("resource_id", about) == about)
            ),
            None,
        )

    def refused(self, tool: str) -> dict[str, JsonValue] | None:
        return next((r for r in reversed(self.rejected) if r.get("option") == tool), None)

    def passage(self, anchor: str) -> PacketItem | None:
        return next(
            (
                p
                for p in self.packet.items_of_kind("policy_passage")
                if _source_id(p).endswith(anchor)
            ),
            None,
        )


class Playbook:
    """The ``playbook`` model provider."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        view = _View(packet)
        output = _next_action(view) if packet.step == "choose_next_action" else _answer(view)
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


def _next_action(v: _View) -> dict[str, JsonValue]:
    tools = set(v.packet.tool_names())
    if v.errors or v.order_id is None:
        return {
            "type": "proceed",
            "to": "draft_answer",
            "rationale": "nothing further can be verified",
        }
    status = v.fact("order_status")
    if status is None and "get_order" in tools:
        return _call("get_order", {"order_id": v.order_id}, "verify the order first")
    query = _POLICY_QUERIES.get(str(status))
    if query and v.done("search_returns_policy") is None and "search_returns_policy" in tools:
        return _call("search_returns_policy", {"query": query}, "find the governing policy")
    return {
        "type": "proceed",
        "to": "draft_answer",
        "rationale": "order verified and policy retrieved",
    }


def _answer(v: _View) -> dict[str, JsonValue]:
    if v.order_id is None:
        return _reply(
            "Which order is this about? Please send its order number (it looks like "
            "ord_4821) and I will check it.",
            [],
        )
    settled = _settled(v, v.order_id)
    if settled is not None:
        return settled
    status = v.fact("order_status")
    passage = v.passage(_ANCHORS.get(str(status), "#none"))
    if status == "delivered_late" and passage is not None:
        offered = _offer(v, v.order_id, passage)
        if offered is not None:
            return offered
    return _reply(_explain(v, str(status)), [_source_id(passage)] if passage else [])


def _settled(v: _View, order_id: str) -> dict[str, JsonValue] | None:
    """The answer once the run has done or been refused something (or the order was not
    found); ``None`` while nothing has happened yet."""
    refund = v.done("create_refund", about=order_id)
    if refund is not None and refund.get("status") != "succeeded":
        error = v.errors[-1] if v.errors else {}
        return _reply(
            f"The refund for order {order_id} could not be made "
            f"({error.get('code', 'failed')}: {error.get('message', 'no detail')}). Nothing "
            "was paid; a support agent will follow up.",
            [],
        )
    if v.errors:
        return _reply(
            f"I could not find order {order_id} on your account. Please check the order "
            "number and ask again.",
            [],
        )
    if refund is not None:
        return _reply(
            f"Your refund of {refunded_text(v, refund)} for order {order_id} has been created "
            f"(receipt {refund.get('receipt_id')}). It reaches your original payment "
            "method within 5 business days.",
            _cite(v, "#late-delivery", "#refund-method"),
            confirms=[refund],
        )
    refused = v.refused("create_refund")
    if refused is None:
        return None
    return _reply(
        f"Your order {order_id} qualifies for a refund review, but the refund "
        f"was not carried out ({refused.get('reason_code')}: "
        f"{refused.get('detail')}). A support agent will follow up.",
        _cite(v, "#late-delivery"),
    )


def _offer(v: _View, order_id: str, passage: PacketItem) -> dict[str, JsonValue] | None:
    """A late delivery's refund, proposed for approval (``None`` when it cannot be)."""
    amount = v.fact("refundable_amount")
    if not (isinstance(amount, int | float) and amount > 0) or "create_refund" not in _proposable(
        v
    ):
        return None
    arguments: dict[str, JsonValue] = {
        "order_id": order_id,
        "amount": amount,
        "currency": v.fact("currency"),
        "reason": "late delivery",
    }
    return _reply(
        f"Order {order_id} arrived late, and late deliveries qualify for a refund "
        f"review within 30 days. I have asked a support approver to refund "
        f"{amount_text(v)}; no refund has been made yet.",
        [_source_id(passage)],
        proposal={"tool": "create_refund", "arguments": arguments},
    )


def _explain(v: _View, status: str) -> str:
    if status == "refunded":
        return f"Order {v.order_id} has already been refunded in full; nothing more is due."
    if status == "delivered":
        return (
            f"Order {v.order_id} was delivered on time, so it does not qualify for a "
            "late-delivery refund. Unused items can be returned within 14 days."
        )
    if status == "in_transit":
        return f"Order {v.order_id} is still in transit and cannot be refunded yet."
    return f"Order {v.order_id} is {status}; it is not eligible for a refund."


def amount_text(v: _View) -> str:
    return f"{v.fact('refundable_amount')} {v.fact('currency')}"


def refunded_text(v: _View, refund: dict[str, JsonValue]) -> str:
    """The amount the refund's receipt says was paid: an approver may have approved less than
    was refundable (an edited grant), and the answer reports what ran."""
    paid = v.result_of(refund)
    if "amount" not in paid:
        return amount_text(v)
    return f"{paid['amount']} {paid.get('currency', v.fact('currency'))}"


def _proposable(v: _View) -> set[str]:
    return {t.name for t in v.packet.proposable_actions}


def _cite(v: _View, *anchors: str) -> list[str]:
    return [_source_id(p) for a in anchors if (p := v.passage(a)) is not None]


def _call(tool: str, arguments: dict[str, JsonValue], rationale: str) -> dict[str, JsonValue]:
    return {
        "type": "call_tool",
        "proposal": {"tool": tool, "arguments": arguments},
        "rationale": rationale,
    }


def _reply(
    answer: str,
    sources: list[str],
    *,
    confirms: list[dict[str, JsonValue]] | None = None,
    proposal: dict[str, JsonValue] | None = None,
) -> dict[str, JsonValue]:
    """An answer; ``confirms``: the completed actions it reports, each claimed with the
    resource its receipt is about (the runtime checks it and renders the receipt's line)."""
    claims: list[JsonValue] = [
        {
            "operation_id": a.get("operation_id"),
            "tool": a.get("tool"),
            "resource_id": a.get("resource_id"),
        }
        for a in confirms or []
    ]
    return {
        "type": "answer",
        "answer": answer,
        "supporting_source_ids": list(dict.fromkeys(sources)),
        "claims": claims,
        "proposed_next_action": proposal,
    }


def _source_id(item: PacketItem) -> str:
    return item.id if "#" in item.id else item.source


def _dict(value: JsonValue) -> dict[str, JsonValue]:
    return value if isinstance(value, dict) else {}


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def _str(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
