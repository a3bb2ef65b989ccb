"""Text no UTF-8 can carry (a lone surrogate) is found wherever it sits in a JSON value."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from agentledger.domain.limits import unencodable_problem

LONE = "\ud800"


def test_a_lone_surrogate_in_a_value_or_a_key_is_named() -> None:
    values: list[JsonValue] = [LONE, [1, {"a": f"x{LONE}"}], {f"k{LONE}": 1}, {"a": [["\udfff"]]}]
    for value in values:
        assert unencodable_problem(value, "the output") == (
            "the output carry text that is not valid Unicode (a lone surrogate)"
        )


TEXT = st.text(st.characters(blacklist_categories=()), max_size=6)  # surrogates included
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_a_value_is_refused_exactly_when_its_json_cannot_be_utf8(value: JsonValue) -> None:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        encodes = True
    except UnicodeEncodeError:
        encodes = False
    assert (unencodable_problem(value, "v") is None) == encodes
