"""Claims of effect: an answer may say an effect happened only by pointing at the receipt.

A claim names the operation, the tool that ran it and the resource it was about (the value of
the contract's resource argument, recorded on ``ToolCallAuthorised``). It is supported only by a
succeeded receipt of that operation from that tool about that resource; anything else is an
``unsupported_claim``. Supported claims reach the customer as the receipt's own user view,
rendered here, so the words that state an effect are the system of record's, not the model's.

What this cannot check: the answer's free prose. A sentence such as "your card is extended"
written without a claim is text like any other; the runtime neither parses nor believes it.
"""

from __future__ import annotations

from agentledger.domain.decisions import Answer, Claim
from agentledger.domain.state import CompletedAction, WorkingState

CONFIRMED_HEADING = "Confirmed by the system of record:"


def unsupported_claims(answer: Answer, state: WorkingState, bound_claims: bool) -> str | None:
    """Why the answer's claims are not supported by the run's receipts (``None``: they are).
    ``bound_claims``: the manifest's; under it ids-only claims name no resource and are
    refused."""
    problems: list[str] = []
    if bound_claims and answer.claimed_operation_ids:
        ids = ", ".join(answer.claimed_operation_ids)
        problems.append(
            f"claimed_operation_ids ({ids}) name no tool or resource; claim through claims"
            " (operation_id, tool, resource_id)"
        )
    for claim in answer.claims:
        problem = _claim_problem(claim, state.receipt_for(claim.operation_id), bound_claims)
        if problem is not None:
            problems.append(problem)
    return "; ".join(problems) or None


def _claim_problem(claim: Claim, done: CompletedAction | None, bound: bool) -> str | None:
    """A run frozen before claims were bound recorded no resource on its calls: its claims are
    held to the receipt's operation, outcome and tool only (``bound=False``)."""
    about = claim.resource_id if claim.resource_id is not None else "no resource"
    said = f"{claim.tool} on {about} ({claim.operation_id})"
    if done is None:
        return f"{said}: the run holds no receipt of that operation"
    if done.status != "succeeded":
        return f"{said}: its receipt is {done.status}"
    if done.tool != claim.tool:
        return f"{said}: the receipt is of {done.tool}"
    if bound and done.resource_id != claim.resource_id:
        was = done.resource_id if done.resource_id is not None else "no recorded resource"
        return f"{said}: the receipt is about {was}"
    return None


def confirmations(answer: Answer, state: WorkingState) -> tuple[str, ...]:
    """One line per claimed receipt, from its user view, in the order claimed."""
    lines: list[str] = []
    for claim in dict.fromkeys(answer.claims):
        done = state.receipt_for(claim.operation_id)
        if done is None or done.status != "succeeded":
            continue
        receipt = f" (receipt {done.receipt_id})" if done.receipt_id else ""
        lines.append(f"- {done.summary or done.tool}{receipt}")
    return tuple(lines)


def delivered_text(answer: Answer, state: WorkingState) -> str:
    """The text the customer receives: the answer, then the runtime's confirmation of each
    effect it claims. An answer without claims is delivered as written."""
    lines = confirmations(answer, state)
    if not lines:
        return answer.answer
    return "\n".join((answer.answer.rstrip(), "", CONFIRMED_HEADING, *lines))
