"""What a model call costs, exactly, and a run's cost limit kept like its step limit."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import ValidationError

from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import Answer, ProceedToAnswer
from agentledger.domain.errors import ManifestError
from agentledger.domain.fold import project
from agentledger.domain.manifest import resolve_manifest
from agentledger.domain.model_calls import (
    ModelCall,
    ModelStepResult,
    TokenUsage,
    priced_call,
    unpriced_cost_limit,
)
from agentledger.domain.model_profile import ModelProfile, ModelRoute, Price
from agentledger.domain.run_loop import budget_exhausted, narrowed_budget
from agentledger.domain.state import BudgetUsed, WorkingState
from agentledger.domain.steps import Recording, after_model_step, complete
from agentledger.domain.workorder import Budget
from agentledger.packs.support.profile import SUPPORT_PROFILE
from bench.factories import T0, RunScript

GPT = Price(
    currency="USD",
    input_per_million=Decimal("2.00"),
    cached_input_per_million=Decimal("0.50"),
    output_per_million=Decimal("8.00"),
)


def _manifest(profile: object = SUPPORT_PROFILE) -> object:
    return resolve_manifest(
        profile,  # type: ignore[arg-type]
        contracts=get_pack("support").contracts,
        attempt_id="att-1",
        work_order_digest=sha256_hex("work-order"),
        memory_snapshot="none",
        policy_version="returns-2026-08",
    )


def test_a_call_costs_fresh_input_cached_input_and_output_at_their_own_rates() -> None:
    # 300 fresh × 2.00 + 512 cached × 0.50 + 37 out × 8.00, per million: exact, no float.
    assert GPT.cost(812, 512, 37) == Decimal("0.001152")
    assert GPT.cost(0, 0, 0) == 0


def test_an_unpriced_call_has_an_unknown_cost_never_zero() -> None:
    usage = TokenUsage(input_tokens=812, cached_tokens=512, output_tokens=37, reported=True)
    assert priced_call("openai", "gpt", usage, None).cost is None
    priced = priced_call("openai", "gpt", usage, GPT, attempt=3, route=1)
    assert (priced.cost, priced.currency, priced.attempt, priced.route) == (
        Decimal("0.001152"),
        "USD",
        3,
        1,
    )


def test_a_price_in_an_unknown_currency_is_refused() -> None:
    with pytest.raises(ValidationError, match="currency 'DOGE'"):
        Price(
            currency="DOGE",
            input_per_million=Decimal(1),
            cached_input_per_million=Decimal(1),
            output_per_million=Decimal(1),
        )


def test_profiles_and_budgets_without_the_new_fields_keep_their_digests() -> None:
    profile = SUPPORT_PROFILE.model
    dumped = profile.model_dump(mode="json")
    assert {"price", "fallbacks", "capabilities"}.isdisjoint(dumped)
    assert "max_cost" not in Budget().model_dump(mode="json")
    assert "cost" not in BudgetUsed().model_dump(mode="json")
    manifest = _manifest()
    assert "max_cost" not in str(manifest.canonical())  # type: ignore[attr-defined]
    priced = profile.model_copy(update={"price": GPT})
    assert sha256_hex(priced.model_dump(mode="json")) != sha256_hex(dumped)


def test_a_cost_limit_without_a_price_is_refused_at_preparation() -> None:
    limited = SUPPORT_PROFILE.model_copy(
        update={"budgets": SUPPORT_PROFILE.budgets.model_copy(update={"max_cost": Decimal(1)})}
    )
    with pytest.raises(ManifestError, match="max_cost 1 needs a price"):
        _manifest(limited)
    priced = limited.model_copy(update={"model": limited.model.model_copy(update={"price": GPT})})
    assert _manifest(priced).budgets.max_cost == Decimal(1)  # type: ignore[attr-defined]


def test_a_chain_priced_in_two_currencies_is_refused() -> None:
    eur = GPT.model_copy(update={"currency": "EUR"})
    model = ModelProfile(
        name="m",
        provider="openai",
        model="gpt",
        price=GPT,
        fallbacks=(ModelRoute(provider="anthropic", model="claude", price=eur),),
    )
    assert "priced in ['EUR', 'USD']" in (unpriced_cost_limit(model, Budget()) or "")


def test_the_cost_limit_is_used_up_like_the_step_limit() -> None:
    budget = Budget(max_cost=Decimal("0.002"))
    under = WorkingState(budget=budget, used=BudgetUsed(cost=Decimal("0.001152")))
    at = WorkingState(budget=budget, used=BudgetUsed(cost=Decimal("0.002")))
    assert budget_exhausted(under, T0) is None
    assert budget_exhausted(at, T0) == "cost"
    assert narrowed_budget(Budget(max_cost=Decimal(5)), budget).max_cost == Decimal("0.002")
    assert narrowed_budget(Budget(), budget).max_cost == Decimal("0.002")


def test_each_model_call_is_recorded_and_the_run_completes_with_its_total() -> None:
    manifest = _manifest()
    script = RunScript(manifest_hash=manifest.hash)  # type: ignore[attr-defined]
    script.started()
    script.step()
    rec = Recording(run_id=script.run_id, state=project(script.events), manifest_hash="h")
    usage = TokenUsage(input_tokens=812, cached_tokens=512, output_tokens=37, reported=True)
    for attempt in (1, 2):
        result = ModelStepResult(
            decision=ProceedToAnswer(),
            tokens_used=849,
            usage=usage,
            call=priced_call("openai", "gpt", usage, GPT, attempt=attempt),
        )
        after_model_step(rec, T0, "choose_next_action", result, manifest)  # type: ignore[arg-type]
    calls = [e for e in rec.outbox if isinstance(e, ev.ModelCalled)]
    assert [(c.provider, c.model, c.attempt, c.cost) for c in calls] == [
        ("openai", "gpt", 1, Decimal("0.001152")),
        ("openai", "gpt", 2, Decimal("0.001152")),
    ]
    assert rec.state.used.cost == Decimal("0.002304")
    complete(rec, T0, Answer(answer="Done."), currency="USD")
    completed = rec.outbox[-1]
    assert isinstance(completed, ev.RunCompleted)
    assert (completed.total_cost, completed.currency) == (Decimal("0.002304"), "USD")


def test_a_result_recorded_before_calls_were_records_no_call() -> None:
    manifest = _manifest()
    script = RunScript(manifest_hash=manifest.hash)  # type: ignore[attr-defined]
    script.started()
    script.step()
    rec = Recording(run_id=script.run_id, state=project(script.events), manifest_hash="h")
    old = ModelStepResult.model_validate({"decision": {"type": "proceed_to_answer"}})
    after_model_step(rec, T0, "choose_next_action", old, manifest)  # type: ignore[arg-type]
    assert not any(isinstance(e, ev.ModelCalled) for e in rec.outbox)
    assert ModelCall(provider="p", model="m").cost is None


def test_an_unusable_reply_is_rejected_with_the_raw_reply_bounded() -> None:
    manifest = _manifest()
    script = RunScript(manifest_hash=manifest.hash)  # type: ignore[attr-defined]
    script.started()
    script.step()
    rec = Recording(run_id=script.run_id, state=project(script.events), manifest_hash="h")
    raw = '{"choices": [' + "x" * 20_000
    result = ModelStepResult(rejection="model reply unusable: not JSON", raw_reply=raw)
    after_model_step(rec, T0, "choose_next_action", result, manifest)  # type: ignore[arg-type]
    (rejected,) = [e for e in rec.outbox if isinstance(e, ev.DecisionRejected)]
    assert rejected.reason_code == "malformed_model_output"
    assert rejected.raw_reply.startswith('{"choices": [xxx') and len(rejected.raw_reply) < 8_100
    assert rejected.raw_reply.endswith("more characters not recorded]")


def test_a_model_steps_time_out_is_sized_by_its_providers_time_out_and_chain() -> None:
    from agentledger.domain.model_profile import ModelProfile, ModelRoute

    scripted = ModelProfile(name="p", provider="playbook", model="v1")
    slow = ModelProfile(
        name="l",
        provider="local",
        model="m",
        settings={"timeout_seconds": 300},
        fallbacks=(ModelRoute(provider="api", model="x"),),
    )
    assert scripted.step_seconds() == 30 + 60  # the providers' default per call, and a minute
    assert slow.step_seconds() == 2 * 300 + 60
