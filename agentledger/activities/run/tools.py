"""``execute_tool`` and ``reconcile_tool``: an authorised call run (a write reconciled by its
idempotency key first) or a lost outcome asked of the system of record; either way a receipt,
and never under a tool version other than the one the run froze."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from temporalio import activity

from agentledger.activities import _telemetry
from agentledger.activities.messages import ReconcileToolInput, ToolStepInput
from agentledger.activities.ports import ToolCall, ToolImplementation, ToolOutput
from agentledger.activities.run._base import RunBase
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import model_view, user_view
from agentledger.domain.mcp import pinned_tool
from agentledger.domain.tools import Receipt, ToolContract, bounded_receipt


class ToolCalling(RunBase):
    @activity.defn(name="execute_tool")
    def execute_tool(self, params: ToolStepInput) -> Receipt:
        self._append(params.outbox)
        tool = self._tool(params)
        changed = self._changed_contract(params, tool)
        if changed is not None:
            return self._receipt(params, tool, changed)
        records = self._records(params, tool)
        if isinstance(records, ToolOutput):
            return self._receipt(params, tool, records)
        call = self._tool_call(params, tool)
        with _telemetry.span(
            "agentledger.tool_execute", params.run_id, params.manifest_hash, tool=params.tool
        ) as executed:
            # A write first asks the system of record whether this key already ran: a retry
            # after a crash returns the original receipt instead of acting twice.
            write = tool.contract.scope == "write"
            output = tool.reconcile(records, call) if write else None
            if output is None:
                output = tool.execute(records, call)
            executed.set_attribute("agentledger.outcome", output.status)
        return self._receipt(params, tool, output)

    @activity.defn(name="reconcile_tool")
    def reconcile_tool(self, params: ReconcileToolInput) -> Receipt:
        self._append(params.outbox)
        tool = self._tool(params)
        changed = self._changed_contract(params, tool)
        if changed is not None:
            return self._receipt(params, tool, changed)
        records = self._records(params, tool)
        if isinstance(records, ToolOutput):
            return self._receipt(params, tool, records)
        output = tool.reconcile(records, self._tool_call(params, tool))
        if output is None:
            output = ToolOutput(
                status="failed",
                output={"error": "not_executed"},
                error_code="not_executed",
                error_message="the system of record shows no effect for this "
                "operation; it did not happen",
            )
        return self._receipt(params, tool, output)

    def _tool(self, params: ToolStepInput) -> ToolImplementation:
        native = self._pack(params.pack).tools.get(params.tool)
        if native is not None:
            return native
        # A pinned MCP tool, rebuilt from the manifest: no worker-side view of the server.
        from agentledger.activities.mcp import McpToolImplementation, PreapprovedElicitations

        pins = self._manifests(params.manifest_hash).mcp_servers
        pin, name = pinned_tool(pins, params.tool)
        return McpToolImplementation(
            self._contracts(params.manifest_hash, params.pack)[params.tool],
            pin,
            name,
            elicitation_handler=PreapprovedElicitations(params.elicitation_answers),
        )

    def _records(self, params: ToolStepInput, tool: ToolImplementation) -> Engine | ToolOutput:
        """The system of record the call runs against: production, but a fork's writes run
        only against its pack's sandbox (a copy, ``activities.sandboxes``); its reads see
        production as it is now. A fork's write with no sandbox to run in (a dry fork, a pack
        without one, an MCP tool) is a failed outcome, whatever the gate said."""
        origin = self._manifests(params.manifest_hash).fork_origin if params.manifest_hash else None
        if origin is None or tool.contract.scope != "write":
            return self._ledger.engine
        pack = self._pack(params.pack)
        if pack.sandbox is not None and params.tool in pack.tools and not origin.dry:
            return self._sandboxes.engine(params.run_id, pack)
        return ToolOutput(
            status="failed",
            output={"error": "fork_dry"},
            error_code="fork_dry",
            error_message=f"{params.tool} writes, and this fork of {origin.run_id} has no "
            "sandbox to write to; nothing ran",
        )

    def _changed_contract(
        self, params: ToolStepInput, tool: ToolImplementation
    ) -> ToolOutput | None:
        """A failed outcome when this worker's code is not the tool version the run's attempt
        froze: the call was authorised under those terms, so another version must not act."""
        frozen = self._manifests(params.manifest_hash).terms.get(params.tool)
        live = tool.contract
        if frozen is None or (frozen.version, frozen.schema_hash) == (
            live.version,
            live.schema_hash,
        ):
            return None
        return ToolOutput(
            status="failed",
            output={"error": "contract_changed"},
            error_code="contract_changed",
            error_message=f"{params.tool} {live.version} is deployed on this worker; the run "
            f"froze {frozen.version}, so the call did not run",
        )

    def _tool_call(self, params: ToolStepInput, tool: ToolImplementation) -> ToolCall:
        arguments = tool.contract.input_model.model_validate(params.arguments)
        return ToolCall(
            operation_id=params.operation_id,
            principal=params.principal,
            arguments=arguments,
            idempotency_key=params.idempotency_key,
            now=params.now,
        )

    def _receipt(
        self, params: ToolStepInput, tool: ToolImplementation, output: ToolOutput
    ) -> Receipt:
        contract = tool.contract
        output_hash = sha256_hex(output.output)
        self._ledger.put_tool_output(
            output_hash, params.run_id, params.operation_id, contract.name, output.output
        )
        receipt = Receipt(
            operation_id=params.operation_id,
            tool=contract.name,
            tool_version=contract.version,
            status=output.status,
            idempotency_key=params.idempotency_key,
            receipt_id=output.receipt_id,
            facts=output.facts,
            resources=output.resources,
            evidence=output.evidence,
            model_view=model_view(output.output, contract.model_view),
            user_view=_user_line(output, contract),
            output_hash=output_hash,
            error_code=output.error_code,
            error_message=output.error_message,
            observed_at=params.now,
        )
        return bounded_receipt(receipt, contract.scope)


FAILED_TEMPLATE = "{tool} failed: {error_code}: {error_message}"


def _user_line(output: ToolOutput, contract: ToolContract) -> str:
    """The activity-stream line: a tool's summary template describes its success; a failure is
    told by its code and message, not by a template whose fields it does not have."""
    if output.status == "succeeded":
        return user_view(output.output, contract.summary_template, tool=contract.name)
    return user_view(
        output.output,
        FAILED_TEMPLATE,
        tool=contract.name,
        error_code=output.error_code or "failed",
        error_message=output.error_message or "",
    )
