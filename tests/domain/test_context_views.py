"""Model view vs user view of one tool result."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentledger.domain.canonical import canonical_json
from agentledger.domain.context import model_view, user_view
from agentledger.domain.tools import ModelView
from bench.context_fixtures import COUNTER

SEARCH = ModelView(
    mode="slim",
    list_field="results",
    keep_fields=("title", "snippet"),
    truncate_words=150,
    max_items=6,
    untouchable_fields=("result_id",),
)
HOTELS = ModelView(
    mode="slim",
    list_field="offers",
    keep_fields=("name", "notes"),
    truncate_words=5,
    max_items=3,
    untouchable_fields=("price", "booking_ref", "flight_no"),
)


def search_result(results: int = 10, words: int = 300) -> dict[str, Any]:
    return {
        "query": "late delivery refund",
        "results": [
            {
                "result_id": f"res_{i}",
                "title": f"Guide {i}",
                "url": f"https://example.org/{i}",
                "snippet": " ".join(["word"] * words),
                "published": "2026-08-01",
            }
            for i in range(results)
        ],
    }


def tokens(value: dict[str, Any]) -> int:
    return COUNTER.count(canonical_json(value).decode())


def test_slimming_reduces_tokens_for_search_style_results() -> None:
    full = search_result()
    slim = model_view(full, SEARCH)
    assert tokens(slim) <= 0.5 * tokens(full)
    shown = slim["results"]
    assert isinstance(shown, list) and len(shown) == 6 and slim["results_omitted"] == 4
    first = shown[0]
    assert isinstance(first, dict) and set(first) == {"result_id", "title", "snippet"}
    snippet = first["snippet"]
    assert isinstance(snippet, str) and snippet.endswith(" …") and len(snippet.split()) == 151


def test_a_full_view_returns_the_result_unchanged() -> None:
    full = search_result(3, 20)
    assert model_view(full, ModelView()) == full


text = st.text(alphabet="abc 0123456789.-", min_size=0, max_size=80)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": text,
                "notes": text,
                "price": text,
                "booking_ref": text,
                "flight_no": text,
                "url": text,
            }
        ),
        max_size=8,
    )
)
def test_untouchable_fields_survive_slimming(offers: list[dict[str, Any]]) -> None:
    result: dict[str, Any] = {"offers": offers, "price": "1 234.50 EUR incl. taxes and fees"}
    slim = model_view(result, HOTELS)
    assert slim["price"] == result["price"]
    kept = slim["offers"]
    assert isinstance(kept, list) and len(kept) == min(3, len(offers))
    for shown, original in zip(kept, offers, strict=False):
        assert isinstance(shown, dict) and "url" not in shown
        for field in HOTELS.untouchable_fields:
            assert shown[field] == original[field]


def test_the_user_view_is_one_line_with_the_complete_result() -> None:
    full = search_result(5, 12)
    line = user_view(
        full,
        "{tool}: found {results_count} items: {results_titles}",
        tool="search_returns_policy",
        status="succeeded",
    )
    assert "\n" not in line
    assert line.startswith("search_returns_policy: found 5 items: Guide 0, Guide 1, Guide 2")
    for i in range(5):
        assert f"https://example.org/{i}" in line


def test_the_default_contract_template_still_renders() -> None:
    line = user_view(
        {"order_id": "ord_4821", "status": "delivered_late"}, "{tool}: {status}", tool="get_order"
    )
    assert line.startswith("get_order: delivered_late | ")
