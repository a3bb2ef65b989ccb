"""A frozen schema's arguments model is built once per process and stays the schema's own."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentledger.domain.arguments import arguments_model

SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id"],
    "additionalProperties": False,
}


def test_the_same_schema_gives_the_same_model_however_many_manifests_carry_it() -> None:
    first = arguments_model("refund_arguments", dict(SCHEMA))
    again = arguments_model("refund_arguments", {k: SCHEMA[k] for k in SCHEMA})

    assert again is first
    assert first.model_validate({"order_id": "ord_1"}).model_dump() == {"order_id": "ord_1"}


def test_another_schema_or_name_gives_another_model() -> None:
    reordered = dict(reversed(list(SCHEMA.items())))
    stricter = {**SCHEMA, "required": ["order_id", "amount"]}

    base = arguments_model("refund_arguments", SCHEMA)

    assert arguments_model("refund_arguments", stricter) is not base
    assert arguments_model("other_arguments", SCHEMA) is not base
    # Key order is part of what a model is shown, so it is part of the key.
    assert list(arguments_model("refund_arguments", reordered).model_json_schema()) == list(
        reordered
    )
    with pytest.raises(ValidationError, match="amount"):
        arguments_model("refund_arguments", stricter).model_validate({"order_id": "ord_1"})


def test_a_schema_with_an_integer_beyond_64_bits_is_still_built() -> None:
    huge = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**70}}}

    model = arguments_model("huge_arguments", huge)

    assert model.model_validate({"n": 2**69}).model_dump() == {"n": 2**69}
    with pytest.raises(ValidationError):
        model.model_validate({"n": 2**71})
