"""Which model decides, with which settings, at what price and with which fallbacks: pinned
into every attempt's manifest."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import (
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from agentledger.domain._model import Frozen

CURRENCIES = frozenset({"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK"})
"""Currencies a price may be in (ISO 4217); another is refused where the profile is read."""

FallbackOn = Literal["rate_limited", "server_error", "timeout", "overloaded", "unavailable"]
ALL_FALLBACK_ON: tuple[FallbackOn, ...] = (
    "rate_limited",
    "server_error",
    "timeout",
    "overloaded",
    "unavailable",
)
"""Failures that may move a call down its chain. Never a refusal or a rejected reply: those are
the model's answer, and another model must not be asked until one says yes."""


class ModelCapabilities(Frozen):
    """What the provider behind a profile can do, declared by its kind when the profile is made
    and frozen with it, so a run keeps the protocol it started with after a worker upgrade."""

    native_tool_calls: bool = False
    json_schema_output: bool = False
    streaming: bool = False
    prompt_caching: bool = False
    reasoning_blocks: bool = False


class Price(Frozen):
    """What a model's tokens cost, per million, in one currency. Exact: ``Decimal``."""

    currency: str
    input_per_million: Decimal = Field(ge=0)
    cached_input_per_million: Decimal = Field(ge=0)
    output_per_million: Decimal = Field(ge=0)

    @field_validator("currency")
    @classmethod
    def _known_currency(cls, currency: str) -> str:
        if currency not in CURRENCIES:
            known = ", ".join(sorted(CURRENCIES))
            raise ValueError(f"price currency {currency!r} is not one of {known}")
        return currency

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> Decimal:
        """Cached input is billed at its own rate; the rest of the input at the input rate."""
        fresh = max(input_tokens - cached_tokens, 0)
        total = (
            fresh * self.input_per_million
            + min(cached_tokens, input_tokens) * self.cached_input_per_million
            + output_tokens * self.output_per_million
        )
        return total / Decimal(1_000_000)


DEFAULT_CALL_SECONDS = 30.0
"""A provider's per-call time-out unless its settings say (``ProviderSettings``)."""


class ModelRoute(Frozen):
    """One step down a fallback chain: a provider (configured on the worker) and its model."""

    provider: str
    model: str
    price: Price | None = None
    on: tuple[FallbackOn, ...] = ALL_FALLBACK_ON


class ModelProfile(Frozen):
    """Which model decides, with which settings. ``encoding`` selects the token counter."""

    name: str
    provider: str
    model: str
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    encoding: str = "cl100k_base"
    capabilities: ModelCapabilities | None = None
    """``None`` only in profiles frozen before capabilities were declared."""
    price: Price | None = None
    fallbacks: tuple[ModelRoute, ...] = ()
    """Tried in order when a call fails in a way the route's ``on`` names."""

    @model_serializer(mode="wrap")
    def _added_fields_left_out_while_unset(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        """Fields added since are left out while unset, so profiles frozen before they existed
        keep their digests (manifest and packet hashes are over this JSON)."""
        data: dict[str, Any] = handler(self)
        for name in ("capabilities", "price", "fallbacks"):
            if not getattr(self, name):
                data.pop(name, None)
        return data

    def canonical(self) -> dict[str, Any]:
        """The JSON digests are over."""
        return self.model_dump(mode="json")

    def step_seconds(self) -> float:
        """How long one model step may run: a call down every route of the chain at this
        profile's per-call time-out (``settings.timeout_seconds``; the providers' default where
        unset), plus a minute for the packet and the stream's last writes. Sized per provider,
        so a slow local model is not cut off at a fast API's limit; a dead worker is caught
        by the step's heartbeat long before."""
        call = self.settings.get("timeout_seconds", DEFAULT_CALL_SECONDS)
        per_call = float(call) if isinstance(call, int | float) else DEFAULT_CALL_SECONDS
        return per_call * (1 + len(self.fallbacks)) + 60.0

    def route(self, index: int) -> tuple[str, str, Price | None]:
        """(provider, model, price) of the chain's ``index``-th entry; 0 is the profile itself."""
        if index == 0:
            return self.provider, self.model, self.price
        entry = self.fallbacks[index - 1]
        return entry.provider, entry.model, entry.price
