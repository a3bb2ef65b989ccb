"""``billing-script``: a scripted, deterministic model for the billing pack (demo and tests).

It reads only the packet: the request, the customer's replies (conversation turns), verified
facts and completed actions. What it decides follows from them: it lists the customer's
subscriptions, asks which one when there are several and none is named, asks what to do when
the request does not say, asks for how long to pause, reads the subscription before acting, and
proposes a consequential change only with the verified facts in the packet.
"""

from __future__ import annotations

import re

from pydantic import JsonValue

from agentledger.sdk import (
    PacketView,
    ScriptedModel,
    answer,
    ask_user,
    call_tool,
    proceed,
)

_SUB_ID = re.compile(r"\bsub_[0-9]{4,12}\b")
_MONTHS = re.compile(r"\b([1-9]|one|two|three)\s+months?\b", re.IGNORECASE)
_WORDS = {"one": 1, "two": 2, "three": 3}
INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cancel", ("cancel", "terminate", "end my subscription")),
    ("pause", ("pause", "put on hold", "suspend")),
    ("credit", ("credit", "refund", "prorat", "money back", "overcharged")),
    ("invoices", ("invoice", "bill", "charges")),
)
ACTIONS = {
    "cancel": "cancel_subscription",
    "pause": "pause_subscription",
    "credit": "issue_prorated_credit",
}
WHAT_TO_DO = (
    "I can cancel or pause a subscription, credit the unused days of this period, or go "
    "through your invoices. Which would you like?"
)


def intent(v: PacketView) -> str | None:
    """What the customer wants: the newest message that says so decides."""
    for text in reversed(v.user_texts()):
        lowered = text.lower()
        found = next((name for name, cues in INTENTS if any(c in lowered for c in cues)), None)
        if found is not None:
            return found
    return None


def subscriptions(v: PacketView) -> dict[str, str]:
    """``{subscription_id: plan}`` of the subscriptions a tool has verified."""
    return {sub: str(plan) for sub, plan in v.resources_with("plan").items()}


def chosen(v: PacketView) -> str | None:
    """The subscription the request is about: the work order's reference, else the newest
    message naming one of the customer's (by id or by plan), else the only one there is."""
    reference = v.reference("subscription_id")
    if reference is not None:
        return reference
    known = subscriptions(v)
    for text in reversed(v.user_texts()):
        named: list[str] = [s for s in _SUB_ID.findall(text) if s in known]
        named += [s for s, plan in known.items() if plan.lower() in text.lower()]
        if len(set(named)) == 1:
            return named[0]
    return next(iter(known)) if len(known) == 1 else None


def months(v: PacketView) -> int | None:
    for text in reversed(v.user_texts()):
        if (match := _MONTHS.search(text)) is not None:
            word = match.group(1).lower()
            return _WORDS.get(word) or int(word)
    return None


def classify(v: PacketView) -> dict[str, JsonValue]:
    if v.errors:
        return proceed("gather", "an error needs explaining")
    if v.succeeded("list_subscriptions") is None and v.reference("subscription_id") is None:
        return call_tool("list_subscriptions", {}, "find the customer's subscriptions")
    known = subscriptions(v)
    if intent(v) is None:
        return ask_user(WHAT_TO_DO, "the request does not say what to do")
    if chosen(v) is None and len(known) > 1:
        options = " or ".join(f"{plan} ({sub})" for sub, plan in known.items())
        return ask_user(f"Which subscription is this about: {options}?", "several match")
    return proceed("gather", "the request and its subscription are known")


def gather(v: PacketView) -> dict[str, JsonValue]:
    sub, wanted = chosen(v), intent(v)
    if v.errors or sub is None:
        return proceed("resolve", "nothing further can be verified")
    if v.fact(sub, "credit_available") is None:
        return call_tool("get_subscription", {"subscription_id": sub}, "verify it first")
    if wanted == "pause" and months(v) is None and v.fact(sub, "status") == "active":
        plan = v.fact(sub, "plan")
        return ask_user(
            f"For how many months would you like to pause {plan} ({sub})? 1 to 3 months.",
            "the pause needs a length",
        )
    if wanted in ("credit", "invoices") and v.fact(sub, "invoice_count") is None:
        return call_tool("list_invoices", {"subscription_id": sub}, "read what was billed")
    return proceed("resolve", "the subscription is verified")


def resolve(v: PacketView) -> dict[str, JsonValue]:
    sub, wanted = chosen(v), intent(v)
    if v.errors:
        error = v.errors[-1]
        return answer(
            f"I could not complete that ({error.get('code')}: {error.get('message')}). "
            "Nothing was changed."
        )
    if sub is None:
        return answer("I found no subscription on your account to help with.")
    if wanted == "invoices" or wanted is None:
        return answer(_invoices_text(v, sub))
    tool = ACTIONS[wanted]
    done = v.succeeded(tool, subscription_id=sub)
    if done is not None:
        return answer(_done_text(v, sub, wanted, done), confirms=[done])
    refused = v.refused(tool)
    if refused is not None:
        return answer(
            f"That was not carried out ({refused.get('reason_code')}: {refused.get('detail')}). "
            "Nothing was changed; a billing specialist will follow up."
        )
    return _propose(v, sub, wanted, tool)


def _propose(v: PacketView, sub: str, wanted: str, tool: str) -> dict[str, JsonValue]:
    status, plan = v.fact(sub, "status"), v.fact(sub, "plan")
    if wanted == "cancel" and status == "cancelled":
        return answer(f"{plan} ({sub}) is already cancelled.")
    if wanted == "pause" and status != "active":
        return answer(f"{plan} ({sub}) is {status}, so it cannot be paused.")
    if wanted == "credit":
        due, currency = v.fact(sub, "credit_available"), v.fact(sub, "currency")
        if not isinstance(due, int | float) or due <= 0:
            return answer(f"There are no unused paid days left to credit on {plan} ({sub}).")
        arguments: dict[str, JsonValue] = {
            "subscription_id": sub,
            "amount": due,
            "currency": currency,
            "reason": "prorated credit for the unused days of the period",
        }
        what = f"a prorated credit of {due:.2f} {currency} on {plan} ({sub})"
    elif wanted == "cancel":
        arguments = {"subscription_id": sub, "reason": "customer asked to cancel"}
        what = f"cancelling {plan} ({sub}) at the end of its paid period"
    else:
        arguments = {"subscription_id": sub, "months": months(v) or 1}
        what = f"pausing {plan} ({sub}) for {arguments['months']} month(s)"
    if not v.can_propose(tool):
        return answer(f"I cannot arrange {what} here; a billing specialist will follow up.")
    return answer(
        f"I have asked a billing lead to approve {what}. Nothing has changed yet.",
        propose=(tool, arguments),
    )


def _done_text(v: PacketView, sub: str, wanted: str, done: dict[str, JsonValue]) -> str:
    plan = v.fact(sub, "plan")
    if wanted == "cancel":
        return (
            f"{plan} ({sub}) is cancelled; service continues until {v.fact(sub, 'service_until')}."
        )
    if wanted == "pause":
        return f"{plan} ({sub}) is paused and resumes on {v.fact(sub, 'resumes_on')}."
    return f"A prorated credit for {plan} ({sub}) was issued (receipt {done.get('receipt_id')})."


def _invoices_text(v: PacketView, sub: str) -> str:
    count, latest = v.fact(sub, "invoice_count"), v.fact(sub, "latest_invoice_id")
    amount, currency = v.fact(sub, "latest_invoice_amount"), v.fact(sub, "currency")
    balance = v.fact(sub, "open_balance")
    if count is None:
        return f"I could not read the invoices of {sub}."
    return (
        f"{sub} has {count} invoice(s); the latest, {latest}, was for {amount} {currency}. "
        f"Open balance: {balance} {currency}."
    )


SCRIPT = ScriptedModel(
    "billing-script", {"classify": classify, "gather": gather, "resolve": resolve}
)
"""The billing pack's scripted model (provider ``billing-script``)."""
