"""A tool function's signature → its contract's input and output models.

The input model is built from the parameters after ``ctx`` (``pydantic.create_model``): every
parameter needs a type pydantic can put in a JSON schema; the model forbids unknown fields. A
``Decimal`` parameter is a JSON number on the wire (fact bounds and approval thresholds compare
numbers; a JSON string or ``true`` is refused) and reaches the function as the exact Decimal the
JSON spelled. The output model is the ``BaseModel`` named by the return annotation:
``M``, ``ToolResult[M]``, either of them ``| ToolFailure``.

A tool whose arguments need more than one parameter's type can say (cross-field checks, a model
whose schema is already pinned by recorded runs) states its own input model (``arguments=``):
then it takes that model whole, as its one parameter after ``ctx``, and the model is the
contract's input model as written.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.errors import PydanticUserError

from agentledger.sdk._context import ToolContext, ToolFailure, ToolResult

_ARGS_CONFIG = ConfigDict(extra="forbid", frozen=True)
_WIRE_NUMBER = Field(strict=True, allow_inf_nan=False)
_UNIONS = (Union, types.UnionType)


class SignatureProblem(Exception):
    """Why a signature cannot become a contract (the pack turns it into PackDefinitionError)."""


@dataclass(frozen=True)
class Signature:
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    parameters: tuple[str, ...]
    decimals: frozenset[str]
    whole: bool = False
    """The one parameter receives the validated input model itself (``arguments=``)."""


def read_signature(fn: Callable[..., object], tool: str) -> Signature:
    hints = _hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    check_context_parameter(params, hints)
    fields: dict[str, Any] = {}
    decimals: set[str] = set()
    for param in params[1:]:
        annotation = _parameter_type(param, hints)
        if annotation is Decimal or _annotated_decimal(annotation):
            decimals.add(param.name)
            annotation = _as_wire_number(annotation)
        elif _mentions_decimal(annotation):
            raise SignatureProblem(
                f"parameter {param.name!r}: a Decimal is supported on its own (a JSON number), "
                "not inside another type"
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model = _build_model(_camel(tool) + "Arguments", fields)
    output = output_model(hints.get("return", inspect.Signature.empty))
    return Signature(model, output, tuple(fields), frozenset(decimals))


def read_model_signature(fn: Callable[..., object], arguments: type[BaseModel]) -> Signature:
    """The signature of a tool that takes its own input model whole: ``(ctx, args: M)``."""
    hints = _hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    check_context_parameter(params, hints)
    if len(params) != 2 or hints.get(params[1].name) is not arguments:
        raise SignatureProblem(
            f"it states arguments={arguments.__name__}, so it takes `ctx` and one parameter "
            f"annotated {arguments.__name__}"
        )
    _parameter_type(params[1], hints)
    try:
        arguments.model_json_schema()
    except (PydanticUserError, TypeError, ValueError) as exc:
        raise SignatureProblem(f"no JSON schema can be derived from {arguments.__name__}") from exc
    output = output_model(hints.get("return", inspect.Signature.empty))
    return Signature(arguments, output, (params[1].name,), frozenset(), whole=True)


def check_context_parameter(params: list[inspect.Parameter], hints: dict[str, Any]) -> None:
    if not params or hints.get(params[0].name) is not ToolContext:
        raise SignatureProblem("the first parameter must be annotated `ctx: ToolContext`")


def _hints(fn: Callable[..., object]) -> dict[str, Any]:
    try:
        return get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as exc:
        raise SignatureProblem(f"its type hints cannot be resolved ({exc})") from exc


def _parameter_type(param: inspect.Parameter, hints: dict[str, Any]) -> Any:
    if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
        raise SignatureProblem(
            f"parameter {param.name!r} is {param.kind.description}; tool arguments are named"
        )
    if param.name not in hints:
        raise SignatureProblem(
            f"parameter {param.name!r} has no type annotation, so no schema can be derived"
        )
    annotation = hints[param.name]
    if annotation in (Any, object):
        raise SignatureProblem(f"parameter {param.name!r} is {annotation!r}, which has no schema")
    return annotation


def _annotated_decimal(annotation: Any) -> bool:
    return get_origin(annotation) is Annotated and get_args(annotation)[0] is Decimal


def _mentions_decimal(annotation: Any) -> bool:
    return annotation is Decimal or any(_mentions_decimal(a) for a in get_args(annotation))


def _as_wire_number(annotation: Any) -> Any:
    metadata = get_args(annotation)[1:] if annotation is not Decimal else ()
    return Annotated[(float, _WIRE_NUMBER, *metadata)]


def _build_model(name: str, fields: dict[str, Any]) -> type[BaseModel]:
    try:
        model: type[BaseModel] = create_model(name, __config__=_ARGS_CONFIG, **fields)
        model.model_json_schema()
    except (PydanticUserError, TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise SignatureProblem(
            f"no JSON schema can be derived from its parameters: {first}"
        ) from exc
    return model


def output_model(annotation: Any) -> type[BaseModel]:
    """The output model a return annotation names (see the module docstring)."""
    if annotation is inspect.Signature.empty:
        raise SignatureProblem("it has no return annotation, so no output schema can be derived")
    options = get_args(annotation) if get_origin(annotation) in _UNIONS else (annotation,)
    models = [o for o in options if o is not ToolFailure]
    if len(models) == 1:
        found = models[0]
        if get_origin(found) is ToolResult:
            found = get_args(found)[0]
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    raise SignatureProblem(
        f"its return annotation {annotation!r} must be M, ToolResult[M] or either | ToolFailure, "
        "with M a pydantic BaseModel"
    )


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def to_decimal(value: float) -> Decimal:
    """The Decimal a JSON number spelled (``Decimal(str(x))``: 12.3 is Decimal('12.3'))."""
    return Decimal(str(value))
