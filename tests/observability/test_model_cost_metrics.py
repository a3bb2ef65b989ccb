"""Model calls counted by who answered them: tokens, and cost at the frozen price, by pack,
provider and model; a call without a price adds no cost."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from prometheus_client import CollectorRegistry

from agentledger.app.observability._metrics_families import Families
from agentledger.app.observability._metrics_projection import LedgerProjection
from agentledger.domain import events as ev
from agentledger.domain.model_profile import Price

PRICE = Price(
    currency="EUR",
    input_per_million=Decimal("2.50"),
    cached_input_per_million=Decimal("1.25"),
    output_per_million=Decimal("10"),
)


class Facts:
    def pack_of(self, run_id: str) -> str | None:
        return "support"

    def model_profile_of(self, manifest_hash: str) -> str | None:
        return None

    def approval_requested_at(self, run_id: str, approval_id: str) -> datetime | None:
        return None


def _called(seq: int, model: str, price: Price | None, route: int = 0) -> ev.ModelCalled:
    cost = price.cost(812, 512, 37) if price is not None else None
    return ev.ModelCalled(
        run_id="run_1",
        seq=seq,
        recorded_at=datetime(2026, 12, 6, tzinfo=UTC),
        manifest_hash="m",
        step="draft_answer",
        provider="house",
        model=model,
        route=route,
        input_tokens=812,
        cached_tokens=512,
        output_tokens=37,
        usage_reported=True,
        cost=cost,
        currency=price.currency if price is not None else None,
    )


def test_calls_count_tokens_and_cost_by_pack_provider_and_model() -> None:
    registry = CollectorRegistry()
    projection = LedgerProjection(Families(registry), Facts())
    projection.appended([_called(1, "big", PRICE), _called(2, "big", PRICE)], 0.001)
    projection.appended([_called(3, "small", None, route=1)], 0.001)
    keys = {"pack": "support", "provider": "house"}
    cost = registry.get_sample_value(
        "agentledger_model_cost_total", {**keys, "model": "big", "currency": "EUR"}
    )
    assert cost == float(2 * PRICE.cost(812, 512, 37))
    assert (
        registry.get_sample_value(
            "agentledger_model_call_tokens_total", {**keys, "model": "small", "type": "output"}
        )
        == 37
    )
    unpriced = {**keys, "model": "small", "currency": "EUR"}
    assert registry.get_sample_value("agentledger_model_cost_total", unpriced) is None
