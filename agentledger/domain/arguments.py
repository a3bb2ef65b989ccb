"""Tool arguments checked against a JSON Schema (``jsonschema``, pure): one validator for every
tool whose schema is frozen in a manifest, native or MCP.

The model reports that schema as its own, so a contract's ``schema_hash`` and the definitions
shown to a model are the frozen schema, byte for byte.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any, ClassVar

import jsonschema  # type: ignore[import-untyped]  # no stubs shipped
import orjson
from pydantic import BaseModel, ConfigDict, JsonValue, model_validator


class SchemaArguments(BaseModel):
    """Arguments of one tool: permissive in pydantic terms, checked by the frozen schema."""

    model_config = ConfigDict(extra="allow", frozen=True)
    tool_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    _validator: ClassVar[Any] = None

    @model_validator(mode="after")
    def _matches_tool_schema(self) -> SchemaArguments:
        errors = sorted(self._validator.iter_errors(self.model_dump()), key=str)
        if errors:
            first = errors[0]
            where = "/".join(str(part) for part in first.absolute_path) or "(root)"
            raise ValueError(f"{len(errors)} schema error(s); at {where}: {first.message}")
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.tool_schema)


def normalised_arguments(
    schema: dict[str, JsonValue], arguments: dict[str, JsonValue]
) -> dict[str, JsonValue]:
    """``arguments`` checked against ``schema`` and completed with the defaults its top-level
    properties declare: the one form in which a call's arguments are compared with a work
    order's bounds, by the planner that computes them and by the gate that holds calls to them.
    A call that leaves out an optional argument means its default, and is compared as such.

    Raises ``pydantic.ValidationError`` when the arguments do not fit the schema.
    """
    checked: dict[str, JsonValue] = (
        arguments_model("normalised", schema).model_validate(arguments).model_dump(mode="json")
    )
    return with_defaults(schema, checked)


def with_defaults(
    schema: dict[str, JsonValue], arguments: dict[str, JsonValue]
) -> dict[str, JsonValue]:
    """``arguments`` (already checked against ``schema``) with every top-level property the call
    left out and the schema gives a default set to that default."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return arguments
    filled = dict(arguments)
    for name, spec in properties.items():
        if name not in filled and isinstance(spec, dict) and "default" in spec:
            filled[name] = copy.deepcopy(spec["default"])
    return filled


def arguments_model(class_name: str, schema: dict[str, JsonValue]) -> type[SchemaArguments]:
    """The arguments model of a frozen schema, built once per (name, schema) in this process.

    Every run's manifest is a new object, so its terms would otherwise build a pydantic class
    and a schema validator (about a millisecond) per run and per worker thread. The key is the
    schema's JSON in its own key order, so equal keys mean the very same schema.
    """
    try:
        key = orjson.dumps(schema)
    except orjson.JSONEncodeError:  # integers beyond 64 bits: built, not memoised
        return _build(class_name, schema)
    return _memoised(class_name, key)


@lru_cache(maxsize=1024)
def _memoised(class_name: str, schema_json: bytes) -> type[SchemaArguments]:
    return _build(class_name, orjson.loads(schema_json))


def _build(class_name: str, schema: dict[str, JsonValue]) -> type[SchemaArguments]:
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    namespace = {"tool_schema": dict(schema), "_validator": validator_cls(schema)}
    return type(class_name, (SchemaArguments,), namespace)
