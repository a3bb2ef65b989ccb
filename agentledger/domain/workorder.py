"""What a run is asked to do, by whom, within which limits."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import Field, JsonValue, SerializerFunctionWrapHandler, model_serializer

from agentledger.domain._model import Frozen
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.principal import Principal


class Budget(Frozen):
    """Hard limits for one run; charged by events and enforced before every step."""

    steps: int = 12
    tool_calls: int = 6
    tokens: int = 60_000
    wall_seconds: int = 7 * 24 * 3600
    max_cost: Decimal | None = Field(default=None, ge=0)
    """In the model's price currency; needs a priced model (refused at preparation without)."""

    @model_serializer(mode="wrap")
    def _cost_left_out_while_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        """So budgets recorded before ``max_cost`` existed keep their digests."""
        data = handler(self)
        if self.max_cost is None and isinstance(data, dict):
            data.pop("max_cost", None)
        return data


class ArgumentBound(Frozen):
    """The values one argument of a granted tool may take under this work order."""

    argument: str
    allowed: tuple[JsonValue, ...]


class WorkGrant(Frozen):
    """A tool the work order authorises; ``bounds`` narrow its arguments (none: any value)."""

    tool: str
    bounds: tuple[ArgumentBound, ...] = ()


class ModelOverride(Frozen):
    """The model a run asks for instead of its profile's: a provider configured on the worker,
    by name, and one of the models it allows (``None``: its first). The endpoint, the key's
    variable and the settings are the worker's, never the run starter's."""

    provider: str
    model: str | None = None
    # Older work orders carried a whole ModelProfile, endpoint and key variable included. They
    # still parse, so recorded histories replay; a new run carrying any of them is refused.
    name: str | None = None
    settings: dict[str, JsonValue] | None = None
    encoding: str | None = None

    def legacy_fields(self) -> list[str]:
        return [f for f in ("name", "settings", "encoding") if getattr(self, f) is not None]


class WorkOrder(Frozen):
    """A run's input. ``references`` are canonical ids the pack resolved from the request."""

    objective: str
    request_text: str
    principal: Principal
    pack: str
    agent_profile_id: str
    references: dict[str, str] = Field(default_factory=dict)
    budget: Budget | None = None
    """Narrows the budgets the attempt's manifest froze (never raises one); ``None``: exactly
    those. The run records the narrowed budget in its ``RunStarted``."""
    model_override: ModelOverride | None = None
    """A configured model provider chosen for this run by name; resolved on the worker and
    frozen into the manifest."""
    grants: tuple[WorkGrant, ...] | None = None
    """What this work order authorises, within the manifest's grants. ``None``: the manifest's
    grants alone. Set by whoever issues the work order, never by a model or a tool result."""


def work_order_digest(order: WorkOrder) -> str:
    """What a run's manifest and its requester's signed start bind: the work order as sent."""
    return sha256_hex(order.model_dump(mode="json"))
