"""Canonical JSON takes integers of any size, exactly, and leaves every other hash as it was."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue, ValidationError

from agentledger.domain.canonical import canonical_json, sha256_hex
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.fold import state_hash
from agentledger.domain.limits import json_problem
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import VerifiedFact

BEYOND_64_BITS = st.integers(min_value=2**64) | st.integers(max_value=-(2**63) - 1)
WITHIN_64_BITS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
AT = datetime(2026, 12, 1, tzinfo=UTC)


def json_values(integers: st.SearchStrategy[int]) -> st.SearchStrategy[JsonValue]:
    leaves = st.none() | st.booleans() | st.text(max_size=10) | integers
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=20,
    )


@given(json_values(BEYOND_64_BITS | WITHIN_64_BITS))
def test_any_integer_is_encoded_exactly(value: JsonValue) -> None:
    assert json.loads(canonical_json(value)) == value


@given(json_values(WITHIN_64_BITS | st.floats(allow_nan=False, allow_infinity=False)))
def test_a_value_orjson_encodes_keeps_its_bytes(value: JsonValue) -> None:
    assert canonical_json(value) == orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@given(st.dictionaries(st.text(max_size=6), BEYOND_64_BITS, min_size=2, max_size=6))
def test_key_order_does_not_change_the_encoding_of_large_integers(value: dict[str, int]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert canonical_json(reordered) == canonical_json(value)


@given(BEYOND_64_BITS)
def test_neighbouring_large_integers_hash_apart(n: int) -> None:
    assert sha256_hex({"n": n}) != sha256_hex({"n": n + 1})
    assert sha256_hex({"n": n}) != sha256_hex({"n": str(n)})


def test_integers_longer_than_pythons_string_limit_are_encoded_digit_for_digit() -> None:
    n = 10**5000 + 12345
    encoded = canonical_json([n, -n])
    assert encoded == b"[1" + b"0" * 4995 + b"12345,-1" + b"0" * 4995 + b"12345]"


def test_hashes_recorded_before_are_unchanged() -> None:
    # Pinned from the encoding as it was before large integers were accepted.
    value = {"b": [2**64 - 1, -(2**63), 1.5, "é"], "a": {"at": AT, "ok": True}}
    assert sha256_hex(value) == (
        "sha256:1d44a6581d177626da899597a76c51228f78071b502ea89aa46cbc4e727fe27e"
    )


@given(BEYOND_64_BITS)
def test_a_state_holding_a_large_integer_has_a_hash(n: int) -> None:
    fact = VerifiedFact(name="balance", value=n, resource_id="acct_1", observed_at=AT)
    state = WorkingState(run_id="run-1", verified_facts={"balance": fact})
    less = fact.model_copy(update={"value": n - 1})
    other = WorkingState(run_id="run-1", verified_facts={"balance": less})
    assert state_hash(state) != state_hash(other)


@given(BEYOND_64_BITS)
def test_tool_arguments_beyond_64_bits_are_refused_at_the_boundary(n: int) -> None:
    assert json_problem({"order_id": [n]}, "tool arguments") == (
        "tool arguments carry an integer beyond 64 bits"
    )
    with pytest.raises(ValidationError, match="beyond 64 bits"):
        ToolCallProposal(tool="get_order", arguments={"order_id": n})
