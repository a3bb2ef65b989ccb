"""What one model step produced and cost: the result the model activity returns, and the
typed record of the call (provider, model, attempt, tokens, cost) the run keeps.

Cost is exact: tokens × the frozen ``Price`` of the route that answered, as ``Decimal``. A run's
total is the sum of its calls' costs (``WorkingState.used.cost``), which ``Budget.max_cost``
bounds before every step (``run_loop.budget_exhausted``).
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from agentledger.domain.decisions import AnyDecision
from agentledger.domain.model_profile import ModelProfile, Price
from agentledger.domain.workorder import Budget


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PacketSummary(_Result):
    packet_hash: str
    cache_key: str
    section_tokens: dict[str, int]
    total_tokens: int
    omission_count: int
    included_ids: tuple[str, ...]
    citable_ids: tuple[str, ...] = ()


class TokenUsage(_Result):
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reported: bool = False


class ModelCall(_Result):
    """One provider call that answered: which route of the chain, in which activity attempt."""

    provider: str
    model: str
    attempt: int = 1
    route: int = 0
    """0: the profile's own model; n: its n-th fallback."""
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reported: bool = False
    cost: Decimal | None = None
    currency: str | None = None


def priced_call(
    provider: str,
    model: str,
    usage: TokenUsage,
    price: Price | None,
    *,
    attempt: int = 1,
    route: int = 0,
) -> ModelCall:
    """The call's record; without a price its cost is unknown (``None``), never zero."""
    cost = None
    if price is not None:
        cost = price.cost(usage.input_tokens, usage.cached_tokens, usage.output_tokens)
    return ModelCall(
        provider=provider,
        model=model,
        attempt=attempt,
        route=route,
        input_tokens=usage.input_tokens,
        cached_tokens=usage.cached_tokens,
        output_tokens=usage.output_tokens,
        reported=usage.reported,
        cost=cost,
        currency=price.currency if price is not None else None,
    )


class ModelStepResult(_Result):
    """Either a parsed decision, a rejection of the model's output, or a refusal to build."""

    packet: PacketSummary | None = None
    decision: AnyDecision | None = Field(default=None, discriminator="type")
    rejection: str | None = None
    raw_reply: str = ""
    """The rejected reply as the provider sent it, bounded (``limits.bounded_raw``)."""
    insufficient_context: str | None = None
    tokens_used: int = 0
    usage: TokenUsage | None = None
    call: ModelCall | None = None
    """``None`` in results recorded before calls were (their histories replay unchanged)."""


def unpriced_cost_limit(model: ModelProfile, budget: Budget) -> str | None:
    """Why a cost limit could not be kept: no price to count with, or a chain whose prices are in
    more than one currency (``None``: it can be)."""
    chain = [(model.model, model.price), *((r.model, r.price) for r in model.fallbacks)]
    currencies = {price.currency for _, price in chain if price is not None}
    if len(currencies) > 1:
        return f"model {model.name!r}: its chain is priced in {sorted(currencies)}; use one"
    unpriced = [name for name, price in chain if price is None]
    if budget.max_cost is None or not unpriced:
        return None
    return (
        f"budget max_cost {budget.max_cost} needs a price for every model of {model.name!r}'s "
        f"chain; unpriced: {', '.join(unpriced)}"
    )
