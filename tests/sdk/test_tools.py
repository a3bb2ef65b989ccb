"""Tools declared through the SDK: schemas from signatures, contracts as stated, refusals at
declaration time, and execution through the runtime's ToolImplementation port."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import create_engine

from agentledger.sdk import (
    AgentPack,
    ApprovalRule,
    MissingIdempotencyKey,
    ModelProfile,
    PackDefinitionError,
    Principal,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolResult,
    step,
)

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)
WHO = Principal(user_id="usr_1", tenant_id="t1", scopes=frozenset({"x:read"}))
ENGINE = create_engine("sqlite://")


class Echo(BaseModel):
    text: str
    amount: Decimal | None = None


def new_pack() -> AgentPack:
    return AgentPack(
        "demo",
        version="1.0.0",
        objective="demo",
        instructions=["be brief"],
        model=ModelProfile(name="m", provider="m", model="m-1"),
        steps=[step("look", tools=["echo"], next=["reply"]), step("reply")],
    )


def call(arguments: BaseModel, key: str | None = None) -> ToolCall:
    return ToolCall(
        operation_id="op_1", principal=WHO, arguments=arguments, idempotency_key=key, now=NOW
    )


def test_the_input_schema_comes_from_the_type_hints() -> None:
    pack = new_pack()

    @pack.read_tool(description="Echo text.", required_scope="x:read")
    def echo(ctx: ToolContext, text: Annotated[str, Field(min_length=2)], times: int = 1) -> Echo:
        return Echo(text=text * times)

    contract = pack.tools["echo"].contract
    schema = contract.input_model.model_json_schema()
    assert schema["required"] == ["text"]
    assert schema["properties"]["text"] == {"minLength": 2, "title": "Text", "type": "string"}
    assert schema["properties"]["times"]["type"] == "integer"
    assert schema["additionalProperties"] is False
    assert contract.output_model is Echo
    assert (contract.scope, contract.risk, contract.approval.kind) == ("read", "low", "never")
    with pytest.raises(ValidationError):
        contract.input_model.model_validate({"text": "hi", "extra": 1})


def test_a_decimal_is_a_json_number_on_the_wire_and_exact_in_the_function() -> None:
    pack = new_pack()
    seen: list[Decimal] = []

    @pack.write_tool(description="Pay.", required_scope="x:write", reconcile=None)
    def echo(ctx: ToolContext, amount: Annotated[Decimal, Field(gt=0)]) -> Echo:
        seen.append(amount)
        return Echo(text=ctx.key, amount=amount)

    tool = pack.tools["echo"]
    schema = tool.contract.input_model.model_json_schema()["properties"]["amount"]
    assert schema == {"exclusiveMinimum": 0, "title": "Amount", "type": "number"}
    for refused in ("12.30", True, -1):
        with pytest.raises(ValidationError):
            tool.contract.input_model.model_validate({"amount": refused})
    out = tool.execute(
        ENGINE, call(tool.contract.input_model.model_validate({"amount": 12.3}), "idem_k")
    )
    assert seen == [Decimal("12.3")] and str(seen[0]) == "12.3"
    assert out.status == "succeeded" and out.output == {"text": "idem_k", "amount": "12.3"}


def test_a_write_is_consequential_approved_always_and_reconcilable_only_when_it_says() -> None:
    pack = new_pack()

    def find(ctx: ToolContext) -> Echo | None:
        return Echo(text="found") if ctx.key == "idem_done" else None

    @pack.write_tool(description="A.", required_scope="x:write", reconcile=find)
    def a(ctx: ToolContext, text: str) -> Echo:
        return Echo(text=text)

    @pack.write_tool(
        description="B.",
        required_scope="x:write",
        reconcile=None,
        risk="low",
        approval=ApprovalRule(kind="above_amount", amount_argument="amount", threshold=50),
    )
    def b(ctx: ToolContext, amount: Decimal) -> Echo:
        return Echo(text="b")

    first, second = pack.tools["a"], pack.tools["b"]
    assert (first.contract.risk, first.contract.approval.kind) == ("consequential", "always")
    assert first.contract.idempotency == "runtime_key" and first.contract.reconcilable
    assert first.contract.on_partial_completion == "reconcile"
    assert not second.contract.reconcilable and second.contract.on_partial_completion == "in_doubt"
    args = first.contract.input_model.model_validate({"text": "x"})
    done = first.reconcile(ENGINE, call(args, "idem_done"))
    assert done is not None and done.output == {"text": "found", "amount": None}
    assert first.reconcile(ENGINE, call(args, "idem_other")) is None
    assert (
        second.reconcile(
            ENGINE, call(second.contract.input_model.model_validate({"amount": 1}), "k")
        )
        is None
    )


def test_a_write_without_the_runtimes_key_does_not_run() -> None:
    pack = new_pack()
    ran: list[str] = []

    @pack.write_tool(description="W.", required_scope="x:write", reconcile=None)
    def echo(ctx: ToolContext, text: str) -> Echo:
        ran.append(text)
        return Echo(text=text)

    tool = pack.tools["echo"]
    out = tool.execute(ENGINE, call(tool.contract.input_model.model_validate({"text": "x"})))
    assert out.status == "failed" and out.error_code == "missing_idempotency_key"
    assert ran == []


def test_results_failures_and_facts_become_tool_outputs() -> None:
    pack = new_pack()

    @pack.read_tool(description="R.", required_scope="x:read", resource_argument="text")
    def echo(ctx: ToolContext, text: str) -> ToolResult[Echo] | ToolFailure:
        if text == "missing":
            return ToolFailure("not_found", "no such thing")
        return ToolResult(
            Echo(text=text),
            receipt_id=f"read-{text}",
            facts=ctx.facts(text, price=Decimal("9.90"), status="active"),
            resources=[ctx.resource(text, "thing", owner_user_id="usr_1", tenant_id="t1")],
        )

    tool, model = pack.tools["echo"], pack.tools["echo"].contract.input_model
    failed = tool.execute(ENGINE, call(model.model_validate({"text": "missing"})))
    assert (failed.status, failed.error_code, failed.error_message) == (
        "failed",
        "not_found",
        "no such thing",
    )
    ok = tool.execute(ENGINE, call(model.model_validate({"text": "t9"})))
    assert ok.receipt_id == "read-t9"
    assert [(f.name, f.value, f.resource_id, f.observed_at) for f in ok.facts] == [
        ("price", 9.9, "t9", NOW),
        ("status", "active", "t9", NOW),
    ]
    assert ok.resources[0].owner_user_id == "usr_1"


def test_a_tool_returning_what_its_contract_does_not_promise_is_a_bug() -> None:
    pack = new_pack()

    @pack.read_tool(description="R.", required_scope="x:read")
    def echo(ctx: ToolContext) -> Echo:
        return {"text": "a dict"}  # type: ignore[return-value]

    tool = pack.tools["echo"]
    with pytest.raises(TypeError, match="promises Echo"):
        tool.execute(ENGINE, call(tool.contract.input_model.model_validate({})))
    with pytest.raises(MissingIdempotencyKey):
        assert ToolContext(ENGINE, WHO, "op", None, NOW, "echo").key


class Opaque:
    pass


def _untyped(ctx: ToolContext, text) -> Echo:  # type: ignore[no-untyped-def]
    return Echo(text=text)


def _opaque(ctx: ToolContext, thing: Opaque) -> Echo:
    return Echo(text="x")


def _anything(ctx: ToolContext, thing: Any) -> Echo:
    return Echo(text="x")


def _no_ctx(text: str) -> Echo:
    return Echo(text=text)


def _var_args(ctx: ToolContext, *texts: str) -> Echo:
    return Echo(text="x")


def _no_return(ctx: ToolContext, text: str):  # type: ignore[no-untyped-def]
    return Echo(text=text)


def _dict_return(ctx: ToolContext, text: str) -> dict[str, str]:
    return {"text": text}


def _nested_decimal(ctx: ToolContext, amounts: list[Decimal]) -> Echo:
    return Echo(text="x")


@pytest.mark.parametrize(
    ("function", "problem"),
    [
        (_untyped, "no type annotation"),
        (_opaque, "no JSON schema can be derived"),
        (_anything, "has no schema"),
        (_no_ctx, "ctx: ToolContext"),
        (_var_args, "tool arguments are named"),
        (_no_return, "no return annotation"),
        (_dict_return, "pydantic BaseModel"),
        (_nested_decimal, "Decimal is supported on its own"),
    ],
)
def test_a_tool_whose_schema_cannot_be_derived_is_refused_and_not_registered(
    function: Callable[..., object], problem: str
) -> None:
    pack = new_pack()
    with pytest.raises(PackDefinitionError, match=problem) as raised:
        pack.read_tool(description="Bad.", required_scope="x:read", name="echo")(function)
    assert raised.value.pack == "demo" and raised.value.subject == "tool 'echo'"
    assert "echo" not in pack.tools


def _echo(ctx: ToolContext, text: str) -> Echo:
    return Echo(text=text)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"description": " "}, "needs a description"),
        ({"resource_argument": "order_id"}, "does not take: \\['order_id'\\]"),
        ({"user_view": "{tool}: {missing}"}, "fields its output has not: \\['missing'\\]"),
        ({"user_view": "{tool"}, "malformed"),
        ({"timeout_seconds": 0}, "timeout_seconds must be positive"),
        (
            {"approval": ApprovalRule(kind="above_amount", amount_argument=None)},
            "does not take: \\[None\\]",
        ),
    ],
)
def test_a_contract_that_names_what_the_tool_does_not_have_is_refused(
    options: dict[str, Any], problem: str
) -> None:
    pack = new_pack()
    settings = {"description": "Echo.", "required_scope": "x:read", "name": "echo", **options}
    with pytest.raises(PackDefinitionError, match=problem):
        pack.read_tool(**settings)(_echo)
    assert "echo" not in pack.tools


def test_a_reconcile_function_takes_only_the_context() -> None:
    pack = new_pack()

    def wrong(ctx: ToolContext, text: str) -> Echo | None:
        return None

    with pytest.raises(PackDefinitionError, match="reconcile function takes exactly"):
        pack.write_tool(description="W.", required_scope="x:w", reconcile=wrong, name="w")(_echo)
    assert "w" not in pack.tools


def test_a_tool_name_is_declared_once_and_nothing_is_declared_after_build() -> None:
    pack = new_pack()
    pack.read_tool(description="Echo.", required_scope="x:read", name="echo")(_echo)
    with pytest.raises(PackDefinitionError, match="declared twice"):
        pack.read_tool(description="Again.", required_scope="x:read", name="echo")(_echo)
    assert pack.tools["echo"].contract.description == "Echo."
    pack.build()
    with pytest.raises(PackDefinitionError, match="after build"):
        pack.read_tool(description="Late.", required_scope="x:read", name="late")(_echo)
