"""The pure parts of an eval: overrides and the hashes they change, a run's figures and
problems, and the significance tests."""

from __future__ import annotations

import random

import pytest

from agentledger.domain import events as ev
from agentledger.domain.decisions import Claim
from agentledger.domain.evaluation import (
    EvalConfig,
    Expectation,
    IdenticalConfigurations,
    ReceiptPattern,
    RunFigures,
    UnknownTool,
    apply_override,
    bootstrap_ci,
    check_distinct,
    configuration_hash,
    problems,
    sign_test,
)
from agentledger.domain.evaluation.figures import ReceiptSeen, figures_of
from agentledger.packs.support.profile import SUPPORT_PROFILE
from bench.factories import RunScript


def _config(name: str, **overrides: object) -> EvalConfig:
    return EvalConfig.model_validate({"name": name, "pack": "support", "overrides": overrides})


def test_each_kind_of_override_changes_the_configuration_hash() -> None:
    base = configuration_hash(SUPPORT_PROFILE)
    variants = [
        {"budgets": {"steps": 5}},
        {"tool_grants": ["get_order", "search_returns_policy", "create_refund"]},
        {"context": {"sections": {"evidence": 900}}},
        {"extra_instructions": [{"id": "instr:brief", "text": "Be brief."}]},
        {"model": {"name": "m", "provider": "local", "model": "gpt-4.1-mini"}},
    ]
    hashes = {
        configuration_hash(apply_override(SUPPORT_PROFILE, _config("x", **v))) for v in variants
    }
    assert len(hashes) == len(variants) and base not in hashes


def test_a_label_alone_does_not_make_configurations_differ() -> None:
    a = apply_override(SUPPORT_PROFILE, _config("a"))
    b = apply_override(SUPPORT_PROFILE, _config("b"))
    assert a.agent_version != b.agent_version
    with pytest.raises(IdenticalConfigurations):
        check_distinct(a, b, ("a", "b"))


def test_an_override_never_widens_grants() -> None:
    with pytest.raises(UnknownTool):
        apply_override(SUPPORT_PROFILE, _config("x", tool_grants=["get_order", "wire_money"]))


def test_a_claim_without_a_succeeded_receipt_and_a_missing_refund_are_problems() -> None:
    figures = RunFigures(
        run_id="r",
        manifest_hash="m",
        status="completed",
        receipts=(ReceiptSeen(tool="create_refund", status="failed", arguments={"amount": 5}),),
        claimed_operation_ids=("op-1",),
        unexecuted_claims=("op-1",),
        answer="Your refund has been created.",
    )
    expect = Expectation(
        receipts=(ReceiptPattern(tool="create_refund"),), answer_excludes=("has been created",)
    )
    found = problems(expect, figures)
    assert len(found) == 3
    assert problems(Expectation(), figures.model_copy(update={"unexecuted_claims": ()})) == ()


def test_a_claim_of_a_receipt_about_another_resource_is_an_unexecuted_claim() -> None:
    s = RunScript()
    s.started()
    s.authorise(
        "op_1", "create_refund", {"order_id": "ord_4821"}, write=True, resource_id="ord_4821"
    )
    s.receipt("op_1", "create_refund", write=True)
    claims = (
        Claim(operation_id="op_1", tool="create_refund", resource_id="ord_4821"),
        Claim(operation_id="op_1", tool="create_refund", resource_id="ord_9999"),
    )
    s.add(ev.RunCompleted, answer="Refunded.", cited_source_ids=(), claims=claims)
    figures = figures_of(s.events)
    assert figures.claimed_operation_ids == ("op_1", "op_1")
    assert figures.unexecuted_claims == ("op_1",)


def test_the_sign_test_is_exact() -> None:
    result = sign_test([True] * 10, [False] * 10)
    assert (result.only_a, result.only_b) == (10, 0)
    assert result.p_value == pytest.approx(2 / 1024)
    one_of_ten = sign_test([True] * 9 + [False], [False] * 9 + [True])
    assert one_of_ten.p_value == pytest.approx(2 * 11 / 1024)
    assert sign_test([True, False], [True, False]).p_value == 1.0


def test_the_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 3.5, 6.0]
    first = bootstrap_ci(a, b, random.Random(0))
    assert first == bootstrap_ci(a, b, random.Random(0))
    assert first.mean_difference == pytest.approx(1.375)
    assert first.low <= first.mean_difference <= first.high
    assert first.low < first.high


def test_the_configuration_example_in_the_docs_resolves() -> None:
    import re
    import tomllib
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "eval.md").read_text()
    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", docs, re.S) if "name =" in b]
    config = EvalConfig.model_validate(tomllib.loads(block))
    profile = apply_override(SUPPORT_PROFILE, config)
    assert profile.token_budget.sections["evidence"].tokens == 150
    assert [g.name for g in profile.tool_grants] == [
        "get_order",
        "search_returns_policy",
        "create_refund",
    ]
    assert config.pricing.cost(1_000_000, 1_000_000) == pytest.approx(2.0)


def test_the_svg_writer_escapes_names_and_writes_well_formed_svg() -> None:
    import xml.etree.ElementTree as ET

    from agentledger.evaluation.svg import grouped_bars, stacked_bars

    hostile = "<script>alert(1)</script>"
    plots = [
        grouped_bars("t", [hostile, "b"], {"a&b": [1.0, 2.5], hostile: [0.0, 3.0]}, "s"),
        stacked_bars("t", {hostile: {"evidence": 10.0, "fixed": 5.0}, "x": {}}),
    ]
    for plot in plots:
        root = ET.fromstring(plot)  # well formed, or this raises
        assert root.tag.endswith("svg")
        assert "<script>" not in plot and "&lt;script&gt;" in plot
