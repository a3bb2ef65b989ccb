"""Every side effect of a run: manifests, model steps, tool calls and ledger appends.

Each activity first persists the workflow's outbox (idempotent on (run_id, seq)), so appending
events rides on a round trip the step needs anyway. All are safe to retry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

from pydantic import TypeAdapter
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentledger.activities import _telemetry
from agentledger.activities.directory import check_requester
from agentledger.activities.ledger import Ledger
from agentledger.activities.memory import MemoryStore
from agentledger.activities.messages import (
    ActivityQueues,
    AppendInput,
    ModelStepInput,
    ModelStepResult,
    PrepareRunInput,
    ResumeInput,
    ToolStepInput,
)
from agentledger.activities.models import chosen_model, decide_along_chain
from agentledger.activities.packets import build_step_packet, decided
from agentledger.activities.ports import (
    ModelClient,
    Pack,
    PackLookup,
    ToolCall,
    ToolImplementation,
    ToolOutput,
    UnknownPack,
)
from agentledger.activities.surface import RunSteps
from agentledger.domain.assertions import TrustedKey
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import (
    ContextPacket,
    InsufficientContext,
    model_view,
    user_view,
)
from agentledger.domain.decisions import Decision
from agentledger.domain.errors import ManifestError
from agentledger.domain.events import HandoffRequested, RunEvent, RunStarted
from agentledger.domain.fold import project, state_hash
from agentledger.domain.handoffs import HandoffOrigin, origin_problem
from agentledger.domain.manifest import AgentProfile, ExecutionManifest, resolve_manifest
from agentledger.domain.mcp import McpServerPin, pinned_tool
from agentledger.domain.tools import Receipt, ToolContract, bounded_receipt
from agentledger.domain.workorder import WorkOrder

_DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)


class RunActivities(RunSteps):
    """Activity implementations bound to one ledger and the installed packs and models."""

    def __init__(
        self,
        ledger: Ledger,
        models: Mapping[str, ModelClient],
        packs: PackLookup,
        memory: MemoryStore | None = None,
        *,
        trusted_keys: tuple[TrustedKey, ...],
        queues: ActivityQueues | None = None,
    ) -> None:
        self._memory = memory
        self._queues = queues or ActivityQueues()
        self._trusted_keys = trusted_keys
        self._ledger = ledger
        self._models = models
        self._packs = packs
        self._manifests = lru_cache(maxsize=256)(self._load_manifest)
        self._contracts = lru_cache(maxsize=256)(self._load_contracts)

    def all(self) -> list[Callable[..., object]]:
        return [
            self.prepare_run,
            self.activity_queues,
            self.resume_run,
            self.model_step,
            self.execute_tool,
            self.reconcile_tool,
            self.append_events,
        ]

    @activity.defn(name="prepare_run")
    def prepare_run(self, params: PrepareRunInput) -> ExecutionManifest:
        check_requester(self._ledger, params.work_order.principal)
        pack = self._pack(params.work_order.pack)
        profile, override = self._profile(pack, params), params.work_order.model_override
        if override is not None:
            # A provider configured on this worker, by name: never a run starter's URL or key.
            profile = profile.model_copy(update={"model": chosen_model(override, self._models)})
        try:
            manifest = self._resolved(pack, profile, params)
        except ManifestError as exc:
            # Final: the same profile resolves the same way on every retry; recorded as refused.
            raise ApplicationError(str(exc), type=exc.code, non_retryable=True) from None
        self._ledger.put_manifest(manifest)
        return manifest

    def _profile(self, pack: Pack, params: PrepareRunInput) -> AgentProfile:
        """The pack's profile; for a child run, the one its handoff contract names."""
        if params.handoff_origin is None:
            return pack.profile
        self._check_origin(params.run_id, params.work_order, params.handoff_origin)
        child = pack.profiles.get(params.work_order.agent_profile_id)
        if child is None:
            raise ApplicationError(
                f"pack {pack.name} has no agent profile {params.work_order.agent_profile_id!r}",
                type="handoff_contract_invalid",
                non_retryable=True,
            )
        return child

    def _check_origin(self, run_id: str, work_order: WorkOrder, origin: HandoffOrigin) -> None:
        """A child run is prepared only for a delegation its parent's ledger holds."""
        parent = self._ledger.read_kinds(origin.parent_run_id, "run_started", "handoff_requested")
        requested = next(
            (e for e in parent if isinstance(e, HandoffRequested) and e.child_run_id == run_id),
            None,
        )
        manifest = self._ledger.get_manifest(requested.manifest_hash) if requested else None
        problem = origin_problem(
            origin,
            work_order,
            manifest.handoff(origin.handoff) if manifest else None,
            next((e.work_order for e in parent if isinstance(e, RunStarted)), None),
            requested,
        )
        if problem is not None:
            raise ApplicationError(
                f"{run_id} is not a delegation: {problem}",
                type="handoff_origin_unknown",
                non_retryable=True,
            )

    def _resolved(
        self, pack: Pack, profile: AgentProfile, params: PrepareRunInput
    ) -> ExecutionManifest:
        return resolve_manifest(
            profile,
            attempt_id=f"{params.run_id}/{activity.info().workflow_run_id}",
            work_order_digest=sha256_hex(params.work_order.model_dump(mode="json")),
            memory_snapshot="none",
            policy_version=pack.policy_version(self._ledger.engine),
            contracts=pack.contracts,
            # Each MCP server is discovered at attempt start and its identity, protocol,
            # capabilities and tool-list digest frozen here; calls are checked against them.
            mcp_pins=_pinned_servers(profile),
            # Decisions must be signed with one of these; a later key rotation moves no run.
            trusted_keys=self._trusted_keys,
            handoff_origin=params.handoff_origin,
        )

    @activity.defn(name="activity_queues")
    def activity_queues(self) -> ActivityQueues:
        return self._queues

    @activity.defn(name="resume_run")
    def resume_run(self, params: ResumeInput) -> ExecutionManifest:
        manifest = self._ledger.get_manifest(params.manifest_hash)
        if manifest is None or not manifest.attempt_id.startswith(f"{params.run_id}/"):
            raise _not_this_run(
                f"manifest {params.manifest_hash[:16]} was not frozen for run {params.run_id}"
            )
        if state_hash(project(self._ledger.read_latest(params.run_id))) != params.state_hash:
            raise _not_this_run(
                f"the state carried across continue-as-new is not the fold of {params.run_id}'s "
                "ledger"
            )
        return manifest

    @activity.defn(name="append_events")
    def append_events(self, params: AppendInput) -> int:
        return self._append(params.events)

    @activity.defn(name="model_step")
    def model_step(self, params: ModelStepInput) -> ModelStepResult:
        manifest_hash = params.manifest_hash  # the manifest's: it was loaded by this hash
        with _telemetry.span("agentledger.context_build", params.run_id, manifest_hash) as built:
            try:
                manifest = self._manifests(manifest_hash)
                packet = self._build_packet(params, manifest)
            except InsufficientContext as refusal:
                self._append(params.outbox)
                built.set_attribute("agentledger.outcome", "insufficient_context")
                return ModelStepResult(insufficient_context=str(refusal))
            except Exception:
                self._append(params.outbox)  # stored however the build fails, as before
                raise
            _telemetry.packet_built(built, packet)
        self._record_packet(params, packet)
        if manifest.model.provider not in self._models:
            raise ApplicationError(
                f"no model provider {manifest.model.provider!r} on this worker "
                f"(has: {', '.join(sorted(self._models))})",
                type="UnknownModelProvider",
                non_retryable=True,
            )
        with _telemetry.span("agentledger.model_call", params.run_id, manifest_hash) as called:
            reply, route = decide_along_chain(self._models, packet, manifest.model)
            _telemetry.model_called(called, manifest.model, reply)
        return decided(reply, packet, manifest, route=route, attempt=activity.info().attempt)

    @activity.defn(name="execute_tool")
    def execute_tool(self, params: ToolStepInput) -> Receipt:
        self._append(params.outbox)
        tool = self._tool(params)
        changed = self._changed_contract(params, tool)
        if changed is not None:
            return self._receipt(params, tool, changed)
        call = self._tool_call(params, tool)
        with _telemetry.span(
            "agentledger.tool_execute", params.run_id, params.manifest_hash, tool=params.tool
        ) as executed:
            # A write first asks the system of record whether this key already ran: a retry
            # after a crash returns the original receipt instead of acting twice.
            write = tool.contract.scope == "write"
            output = tool.reconcile(self._ledger.engine, call) if write else None
            if output is None:
                output = tool.execute(self._ledger.engine, call)
            executed.set_attribute("agentledger.outcome", output.status)
        return self._receipt(params, tool, output)

    @activity.defn(name="reconcile_tool")
    def reconcile_tool(self, params: ToolStepInput) -> Receipt:
        self._append(params.outbox)
        tool = self._tool(params)
        changed = self._changed_contract(params, tool)
        if changed is not None:
            return self._receipt(params, tool, changed)
        output = tool.reconcile(self._ledger.engine, self._tool_call(params, tool))
        if output is None:
            output = ToolOutput(
                status="failed",
                output={"error": "not_executed"},
                error_code="not_executed",
                error_message="the system of record shows no effect for this "
                "operation; it did not happen",
            )
        return self._receipt(params, tool, output)

    # ------------------------------------------------------------------ helpers
    def _append(self, events: list[RunEvent]) -> int:
        appended = self._ledger.append(events)
        _telemetry.log_recorded(events)
        return appended

    def _record_packet(self, params: ModelStepInput, packet: ContextPacket) -> None:
        """The outbox and the packet about to be sent, in one transaction (one commit per
        step), both stored before the model is called. Building the packet reads nothing the
        outbox writes, so it may come first."""
        with self._ledger.begin() as conn:
            self._ledger.append_in(conn, params.outbox)
            self._ledger.put_packet_in(
                conn, packet.packet_hash, params.run_id, params.step, packet.model_dump(mode="json")
            )
        _telemetry.log_recorded(params.outbox)

    def _pack(self, name: str) -> Pack:
        try:
            return self._packs(name)
        except UnknownPack as exc:
            # Final: retrying cannot install a pack; the run is recorded as failed instead.
            raise ApplicationError(str(exc), type="UnknownPack", non_retryable=True) from None

    def _load_manifest(self, manifest_hash: str) -> ExecutionManifest:
        manifest = self._ledger.get_manifest(manifest_hash)
        if manifest is None:
            raise ApplicationError(
                f"no manifest {manifest_hash} in the ledger",
                type="UnknownManifest",
                non_retryable=True,
            )
        return manifest

    def _build_packet(self, params: ModelStepInput, manifest: ExecutionManifest) -> ContextPacket:
        state = params.state
        assert state.work_order is not None
        pack = self._pack(state.work_order.pack)
        # Retrieved as the run's principal; the builder decides which steps need them.
        principal = state.work_order.principal
        memories = self._memory.context_items(principal, params.now) if self._memory else []
        return build_step_packet(pack, manifest, params.step, state, params.now, memories)

    def _load_contracts(self, manifest_hash: str, pack: str) -> Mapping[str, ToolContract]:
        return self._manifests(manifest_hash).tool_contracts(self._pack(pack).contracts)

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


def _not_this_run(problem: str) -> ApplicationError:
    return ApplicationError(problem, type="carried_state_mismatch", non_retryable=True)


def _pinned_servers(profile: AgentProfile) -> tuple[McpServerPin, ...]:
    """Each of the profile's MCP servers, discovered and pinned. The MCP client is imported by
    the first run that has one: the SDK (its server side included) costs a worker tens of MB
    that workers whose runs never use MCP need not carry."""
    if not profile.mcp_servers:
        return ()
    from agentledger.activities.mcp import discover, pin_server

    return tuple(pin_server(discover(c), c) for c in profile.mcp_servers)
