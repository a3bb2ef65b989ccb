"""Input and output models for MCP tools, built from the schemas the server lists.

The tool's own JSON Schema is the authority for its arguments: the model is permissive in
pydantic terms (extra fields allowed) and validated with ``jsonschema`` against the exact listed
schema. ``jsonschema`` is a hard dependency of the ``mcp`` SDK, so no fallback is needed. The
class reports the listed schema as its JSON schema, so ``ToolContract.schema_hash`` and the tool
definitions shown to a model are the server's schema, byte for byte.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import jsonschema  # type: ignore[import-untyped]  # no stubs shipped
from pydantic import BaseModel, ConfigDict, JsonValue, model_validator


class McpArguments(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    tool_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    _validator: ClassVar[Any] = None

    @model_validator(mode="after")
    def _matches_tool_schema(self) -> McpArguments:
        errors = sorted(self._validator.iter_errors(self.model_dump()), key=str)
        if errors:
            first = errors[0]
            where = "/".join(str(part) for part in first.absolute_path) or "(root)"
            raise ValueError(f"{len(errors)} schema error(s); at {where}: {first.message}")
        return self

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.tool_schema)


def arguments_model(class_name: str, schema: dict[str, JsonValue]) -> type[McpArguments]:
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    namespace = {"tool_schema": dict(schema), "_validator": validator_cls(schema)}
    return type(class_name, (McpArguments,), namespace)


class McpToolResult(BaseModel):
    """An MCP result as an observation: data the model may read, never instructions."""

    model_config = ConfigDict(frozen=True)

    trust: str = "untrusted_observation"
    server: str
    tool: str
    text: str = ""
    structured: dict[str, JsonValue] | None = None
    other_parts: list[str] = []
    elicitations: list[dict[str, JsonValue]] = []
