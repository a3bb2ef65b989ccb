"""AgentDojo's suite functions, unchanged, behind ToolContracts.

Which calls are consequential is declared here, per suite, because AgentDojo does not say:
everything that changes the environment or sends data out is a write — including
``get_webpage``, which looks like a read but carries whatever is in its URL to a third party
(and AgentDojo records the request). Writes go through the replay journal, exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, JsonValue
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ToolCall, ToolOutput
from agentledger.domain.tools import ApprovalRule, ToolContract
from agentledger.packs.agentdojo.catalog import DojoSandbox, Pair, SuiteName, tool_models
from agentledger.packs.hosted.journal import CallResult, Journal

__all__ = [
    "EFFECTS",
    "SANDBOX_PREFIX",
    "DojoTool",
    "journal",
    "parse_sandbox",
    "sandbox_of",
    "tools_for",
]

SANDBOX_PREFIX = "agentdojo"

EFFECTS: Mapping[SuiteName, frozenset[str]] = {
    "banking": frozenset(
        {
            "send_money",
            "schedule_transaction",
            "update_scheduled_transaction",
            "update_password",
            "update_user_info",
        }
    ),
    "slack": frozenset(
        {
            "add_user_to_channel",
            "send_direct_message",
            "send_channel_message",
            "invite_user_to_slack",
            "remove_user_from_slack",
            "post_webpage",
            "get_webpage",  # egress: the URL itself can exfiltrate data
        }
    ),
}


class DojoResult(BaseModel):
    result: JsonValue = None
    error: str | None = None


def sandbox_of(pair: Pair, nonce: str) -> str:
    """The tenant a run of ``pair`` acts in: its own environment, kept by the journal."""
    parts = (pair.suite, *pair.tasks, pair.attack, pair.version, nonce)
    if any("/" in p or not p for p in parts):
        raise ValueError(f"{parts} cannot name a sandbox tenant")
    return "/".join((SANDBOX_PREFIX, *parts))


def parse_sandbox(sandbox: str) -> Pair:
    """Sandboxes are tenants ``agentdojo/<suite>/<user_task>/<injection_task>/<attack>/<version>
    /<nonce>``; those of runs from before attacks and versions were named lack both (defaults)."""
    parts = sandbox.split("/")
    if len(parts) not in (5, 7) or parts[0] != SANDBOX_PREFIX or parts[1] not in EFFECTS:
        raise ValueError(f"{sandbox!r} is not an AgentDojo sandbox tenant")
    named = parts[4:6] if len(parts) == 7 else []
    return Pair(parts[1], parts[2], parts[3], *named)  # type: ignore[arg-type]


journal = Journal(lambda sandbox: DojoSandbox(parse_sandbox(sandbox)))


class DojoTool:
    def __init__(self, suite: SuiteName, name: str) -> None:
        function = tool_models(suite)[name]
        effect = name in EFFECTS[suite]
        self.suite = suite
        self.contract = ToolContract(
            name=name,
            version="agentdojo-0.1.35",
            description=function.description,
            input_model=function.parameters,
            output_model=DojoResult,
            scope="write" if effect else "read",
            risk="consequential" if effect else "low",
            required_scope=f"{suite}:{'write' if effect else 'read'}",
            approval=ApprovalRule(kind="always" if effect else "never"),
        )

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        sandbox = call.principal.tenant_id
        if parse_sandbox(sandbox).suite != self.suite:
            raise ValueError(f"{sandbox} is not a {self.suite} sandbox")
        args: dict[str, JsonValue] = call.arguments.model_dump(mode="json")
        name = self.contract.name
        if self.contract.scope == "write":
            key = call.idempotency_key or ""
            return _output(journal.write(engine, sandbox, key, name, args), f"journal:{key}")
        return _output(journal.read(engine, sandbox, name, args))

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        if self.contract.scope == "read":
            return self.execute(engine, call)
        found = journal.lookup(engine, call.idempotency_key or "")
        return None if found is None else _output(found.result, f"journal:{found.idempotency_key}")


def tools_for(suite: SuiteName) -> dict[str, DojoTool]:
    return {name: DojoTool(suite, name) for name in sorted(tool_models(suite))}


def _output(result: CallResult, receipt_id: str | None = None) -> ToolOutput:
    if result.status == "succeeded":
        return ToolOutput(
            status="succeeded", output={"result": result.output}, receipt_id=receipt_id
        )
    return ToolOutput(
        status="failed",
        output={"error": result.error},
        receipt_id=receipt_id,
        error_code="agentdojo_tool_error",
        error_message=result.error,
    )
