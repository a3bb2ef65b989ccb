"""τ²'s tools, unchanged, behind ToolContracts: WRITE tools consequential, the rest read-only.

Each contract takes τ²'s own parameter model as its input schema, so the authority gate validates
exactly what τ² would accept. A call runs through ``env.make_tool_call`` on the run's sandbox:
the τ² environment of the tenant named by the principal, kept by the replay journal.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, JsonValue
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.domain.tools import ApprovalRule, ToolContract
from agentledger.packs.hosted.journal import CallResult, Journal
from agentledger.packs.tau2.catalog import (
    TAU2_VERSION,
    Domain,
    Tau2Sandbox,
    checked_domain,
    domain,
)

__all__ = ["SANDBOX_PREFIX", "Tau2Tool", "journal", "sandbox_domain", "tools_for"]

SANDBOX_PREFIX = "tau2"


class Tau2Result(BaseModel):
    """τ²'s return value as JSON (``result``), or the error text of a call that raised."""

    result: JsonValue = None
    error: str | None = None


def sandbox_domain(sandbox: str) -> Domain:
    """Sandboxes are tenants named ``tau2/<domain>/<task>/<nonce>``: one τ² DB per run."""
    prefix, name, *_ = [*sandbox.split("/"), "", ""]
    if prefix != SANDBOX_PREFIX:
        raise ValueError(f"{sandbox!r} is not a τ² sandbox tenant")
    return checked_domain(name)


journal = Journal(lambda sandbox: Tau2Sandbox(sandbox_domain(sandbox)))


class Tau2Tool:
    """A ToolImplementation for one τ² tool of one domain."""

    def __init__(self, name: Domain, tool: str) -> None:
        info = domain(name)
        obj = info.tool_objects[tool]
        write = info.tool_types[tool] == "write"
        self.domain = name
        self.contract = ToolContract(
            name=tool,
            version=f"tau2-{TAU2_VERSION}",
            description=_description(obj),
            input_model=obj.params,
            output_model=Tau2Result,
            scope="write" if write else "read",
            risk="consequential" if write else "low",
            required_scope=f"{name}:{'write' if write else 'read'}",
            timeout_seconds=10.0,
            approval=ApprovalRule(kind="always" if write else "never"),
            summary_template="{tool}: {status}",
        )

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        sandbox, args = self._target(call)
        if self.contract.scope == "write":
            key = call.idempotency_key or ""
            result = journal.write(engine, sandbox, key, self.contract.name, args)
            return _output(result, receipt_id=f"journal:{key}")
        return _output(journal.read(engine, sandbox, self.contract.name, args))

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        if self.contract.scope == "read":
            return self.execute(engine, call)  # a read has no effect to find; ask again
        found = journal.lookup(engine, call.idempotency_key or "")
        return None if found is None else _output(found.result, f"journal:{found.idempotency_key}")

    def _target(self, call: ToolCall) -> tuple[str, dict[str, JsonValue]]:
        sandbox = call.principal.tenant_id
        if sandbox_domain(sandbox) != self.domain:
            raise ValueError(f"{sandbox} is not a {self.domain} sandbox")
        args: dict[str, JsonValue] = call.arguments.model_dump(mode="json")
        return sandbox, args


def tools_for(name: Domain) -> dict[str, Tau2Tool]:
    return {t: Tau2Tool(name, t) for t in sorted(domain(name).tool_types)}


def _output(result: CallResult, receipt_id: str | None = None) -> ToolOutput:
    if result.status == "succeeded":
        return ToolOutput(
            status="succeeded", output={"result": result.output}, receipt_id=receipt_id
        )
    return ToolOutput(
        status="failed",
        receipt_id=receipt_id,
        output={"error": result.error},
        error_code="tau2_tool_error",
        error_message=result.error,
    )


def _description(tool: Any) -> str:
    return " ".join(p for p in (tool.short_desc, tool.long_desc) if p).strip()
