"""A typed tool function and its contract as the runtime's ``ToolImplementation``."""

from __future__ import annotations

import inspect
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, JsonValue
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.domain.tools import ApprovalRule, FactBound, ModelView, Risk, Scope, ToolContract
from agentledger.sdk._context import ToolContext, ToolFailure, ToolResult
from agentledger.sdk._signature import (
    Signature,
    SignatureProblem,
    check_context_parameter,
    read_model_signature,
    read_signature,
    to_decimal,
)

ToolFunction = Callable[..., object]
Reconcile = Callable[[ToolContext], object]
"""``reconcile(ctx)``: what the system of record holds for ``ctx.key`` (the tool's own return
kinds), or ``None`` when nothing ran under that key."""


@dataclass(frozen=True)
class ToolOptions:
    """Everything a tool's decorator states besides the function (see ``AgentPack.read_tool``)."""

    description: str
    required_scope: str
    scope: Scope
    risk: Risk
    name: str | None = None
    version: str = "1.0.0"
    approval: ApprovalRule = field(default_factory=ApprovalRule)
    resource_argument: str | None = None
    fact_bounds: tuple[FactBound, ...] = ()
    model_view: ModelView = field(default_factory=ModelView)
    user_view: str = "{tool} result"
    timeout_seconds: float = 10.0
    heartbeat_seconds: float | None = None
    reconcile: Reconcile | None = None
    arguments: type[BaseModel] | None = None


@dataclass(eq=False)
class SdkTool:
    """A ``ToolImplementation``: calls the function with its validated arguments and turns what
    it returns into a ``ToolOutput``. Writes run only with the runtime's idempotency key."""

    contract: ToolContract
    function: ToolFunction
    signature: Signature
    reconciler: Reconcile | None = None

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        if self.contract.scope == "write" and call.idempotency_key is None:
            return _failed(
                ToolFailure("missing_idempotency_key", "a write runs only under the runtime's key")
            )
        result = self.function(self._context(engine, call), **self._arguments(call.arguments))
        return self._output(result)

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        if self.reconciler is None or call.idempotency_key is None:
            return None
        result = self.reconciler(self._context(engine, call))
        return None if result is None else self._output(result)

    def _context(self, engine: Engine, call: ToolCall) -> ToolContext:
        return ToolContext(
            engine=engine,
            principal=call.principal,
            operation_id=call.operation_id,
            idempotency_key=call.idempotency_key,
            now=call.now,
            tool=self.contract.name,
        )

    def _arguments(self, arguments: BaseModel) -> dict[str, Any]:
        model = self.signature.input_model
        if not isinstance(arguments, model):
            arguments = model.model_validate(arguments.model_dump(mode="json"))
        if self.signature.whole:
            return {self.signature.parameters[0]: arguments}
        values = {name: getattr(arguments, name) for name in self.signature.parameters}
        for name in self.signature.decimals:
            values[name] = to_decimal(values[name])
        return values

    def _output(self, result: object) -> ToolOutput:
        if isinstance(result, ToolFailure):
            return _failed(result)
        if isinstance(result, self.signature.output_model):
            result = ToolResult(result)
        if not isinstance(result, ToolResult) or not isinstance(
            result.output, self.signature.output_model
        ):
            raise TypeError(
                f"{self.contract.name} returned {type(result).__name__}; its contract promises "
                f"{self.signature.output_model.__name__}, ToolResult of it, or ToolFailure"
            )
        output: dict[str, JsonValue] = result.output.model_dump(mode="json")
        return ToolOutput(
            status="succeeded",
            output=output,
            receipt_id=result.receipt_id,
            facts=tuple(result.facts),
            resources=tuple(result.resources),
            evidence=tuple(result.evidence),
        )


def _failed(failure: ToolFailure) -> ToolOutput:
    return ToolOutput(
        status="failed",
        output={"error": failure.code, "message": failure.message},
        error_code=failure.code,
        error_message=failure.message,
    )


def declare_tool(function: ToolFunction, options: ToolOptions) -> SdkTool:
    """The tool, or ``SignatureProblem`` saying why its declaration cannot run."""
    name = options.name or function.__name__
    if not options.description.strip():
        raise SignatureProblem("it needs a description (the model reads it to choose tools)")
    signature = (
        read_signature(function, name)
        if options.arguments is None
        else read_model_signature(function, options.arguments)
    )
    _check_options(options, signature)
    contract = ToolContract(
        name=name,
        version=options.version,
        description=options.description,
        input_model=signature.input_model,
        output_model=signature.output_model,
        scope=options.scope,
        risk=options.risk,
        required_scope=options.required_scope,
        timeout_seconds=options.timeout_seconds,
        heartbeat_seconds=options.heartbeat_seconds,
        # A read is retried, never reconciled: it keeps the contract's default (True), as the
        # built-in packs' reads always have; a write is reconcilable when it says how.
        reconcilable=options.scope == "read" or options.reconcile is not None,
        approval=options.approval,
        resource_argument=options.resource_argument,
        fact_bounds=options.fact_bounds,
        model_view=options.model_view,
        summary_template=options.user_view,
    )
    return SdkTool(contract, function, signature, options.reconcile)


def _check_options(options: ToolOptions, signature: Signature) -> None:
    approval = options.approval
    named = [options.resource_argument, *(b.argument for b in options.fact_bounds)]
    if approval.kind == "above_amount" or approval.roles_above:
        named.append(approval.amount_argument)
    fields = signature.input_model.model_fields if signature.whole else signature.parameters
    unknown = [a for a in named if a is not None and a not in fields]
    if unknown or (
        (approval.kind == "above_amount" or approval.roles_above) and not approval.amount_argument
    ):
        raise SignatureProblem(f"it names arguments it does not take: {unknown or [None]}")
    if options.timeout_seconds <= 0:
        raise SignatureProblem("timeout_seconds must be positive")
    _check_views(options, signature.output_model)
    if options.reconcile is not None:
        _check_reconcile(options.reconcile)


def _check_views(options: ToolOptions, output: type[BaseModel]) -> None:
    fields = set(output.model_fields)
    view = options.model_view
    wanted = [view.list_field] if view.list_field else list(view.untouchable_fields)
    if view.list_field is None and view.mode == "slim":
        raise SignatureProblem("a slim model view needs the list_field it slims")
    missing = [f for f in wanted if f not in fields]
    placeholders = _placeholders(options.user_view)
    derived = {f"{f}_{suffix}" for f in fields for suffix in ("count", "titles")}
    missing += sorted(placeholders - fields - derived - {"tool", "full"})
    if missing:
        raise SignatureProblem(f"its views name fields its output has not: {missing}")


def _placeholders(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError as exc:
        raise SignatureProblem(f"its user_view template is malformed: {exc}") from exc


def _check_reconcile(reconcile: Reconcile) -> None:
    params = list(inspect.signature(reconcile).parameters.values())
    try:
        hints = get_type_hints(reconcile)
    except (NameError, TypeError) as exc:
        raise SignatureProblem(f"its reconcile function's hints cannot be resolved: {exc}") from exc
    if len(params) != 1:
        raise SignatureProblem("its reconcile function takes exactly `ctx: ToolContext`")
    check_context_parameter(params, hints)
