"""The durable agent run: project state from events, build a packet, decide, govern, act.

The workflow is the only author of events. It folds each event into WorkingState the moment it
is emitted (there is no second, mutable copy of state) and keeps the not-yet-persisted ones in an
outbox that rides on the next activity call, so the ledger append adds no round trip of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    # Pure domain code and pydantic models: safe to share with the sandbox, and re-importing
    # pydantic per workflow run would cost far more than the run itself.
    from activities.memory import ProposeMemoryInput
    from activities.messages import (
        AppendInput,
        ModelStepInput,
        ModelStepResult,
        PrepareRunInput,
        ToolStepInput,
    )
    from domain import events as ev
    from domain.approvals import check_approval_decision
    from domain.compaction import can_compact, compact, context_state
    from domain.decisions import Answer, CallTool, ToolCallProposal
    from domain.elicitation import (
        ElicitationRequest,
        declined_elicitation,
        elicitation_approval_digest,
    )
    from domain.fold import evolve, state_hash
    from domain.governance import Allow, Authorization, Deny, authorize
    from domain.manifest import ExecutionManifest
    from domain.memory import outcome_proposal
    from domain.principal import Principal
    from domain.run_loop import check_decision, next_step
    from domain.state import ApprovalOutcome, WorkingState
    from domain.tools import Receipt, ReceiptStatus, ToolContract
    from domain.workorder import WorkOrder
    from packs import contracts_for

_MODEL_TIMEOUT = timedelta(seconds=60)
# Model calls: Temporal owns retries (provider SDK retries are off); a configuration error or a
# rejected request is final, and a provider that stays down ends the run instead of looping.
_MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
    non_retryable_error_types=["ModelConfigError", "ModelRequestRejected", "UnknownModelProvider"],
)
_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
)
# A write nothing can reconcile (an MCP tool) is attempted once: a retry could repeat it.
_ONCE = RetryPolicy(maximum_attempts=1)


class Continuation(BaseModel):
    """What a run carries across continue-as-new: its exact state, that state's hash, and the
    attempt's frozen manifest (the attempt does not change, so neither does its manifest)."""

    model_config = ConfigDict(frozen=True)
    state: WorkingState
    state_hash: str
    manifest: ExecutionManifest


class RunInput(BaseModel):
    model_config = ConfigDict(frozen=True)
    run_id: str
    work_order: WorkOrder
    continued: Continuation | None = None


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(frozen=True)
    approval_id: str
    approver: Principal
    approve: bool
    proposal_digest: str
    reason: str = ""
    content: dict[str, JsonValue] | None = None
    """The answer to an approval that carries a server's elicitation request."""


class ApprovalResult(BaseModel):
    approval_id: str
    decision: str


@workflow.defn(name="AgentRun")
class AgentRunWorkflow:
    def __init__(self) -> None:
        self._state = WorkingState()
        self._outbox: list[ev.RunEvent] = []
        self._manifest: ExecutionManifest | None = None
        self._manifest_hash = ""
        self._contracts: Mapping[str, ToolContract] = {}

    # ----------------------------------------------------------------- the loop
    @workflow.run
    async def run(self, params: RunInput) -> dict[str, Any]:
        if params.continued is not None:
            self._resume(params.continued)
        else:
            await self._start(params)
        while self._state.status == "running":
            step = next_step(self._state)
            if step is None:
                await self._act_on_proposal()
            elif not self._within_budget():
                break
            else:
                await self._run_step(step)
            if self._history_too_long() and can_compact(self._state):
                await self._continue_as_new(params)
        await self._flush()
        return {"status": self._state.status, "answer": self._final_answer()}

    async def _start(self, params: RunInput) -> None:
        try:
            manifest: ExecutionManifest = await workflow.execute_activity(
                "prepare_run",
                PrepareRunInput(run_id=params.run_id, work_order=params.work_order),
                result_type=ExecutionManifest,
                start_to_close_timeout=_MODEL_TIMEOUT,
                retry_policy=_RETRY,
            )
        except ActivityError as exc:
            # A final refusal (an unknown provider, an MCP server that is not the pinned one):
            # the run is recorded as started and failed, under no manifest, and ends cleanly.
            self._emit(ev.RunStarted, work_order=params.work_order, policy_version="")
            self._emit(ev.RunFailed, reason_code="preparation_failed", message=_cause(exc))
            return
        self._pin_manifest(manifest, params.work_order.pack)
        self._emit(
            ev.RunStarted,
            work_order=params.work_order,
            policy_version=manifest.policy_version,
        )

    def _resume(self, carried: Continuation) -> None:
        if state_hash(carried.state) != carried.state_hash:
            raise ApplicationError(
                "the state carried across continue-as-new does not match its hash",
                type="carried_state_mismatch",
                non_retryable=True,
            )
        self._state = carried.state
        self._pin_manifest(carried.manifest, self._work_order().pack)

    def _pin_manifest(self, manifest: ExecutionManifest, pack: str) -> None:
        self._manifest, self._manifest_hash = manifest, manifest.hash
        self._contracts = manifest.tool_contracts(contracts_for(pack))

    def _history_too_long(self) -> bool:
        info, policy = workflow.info(), self._manifest_().compaction
        return (
            info.get_current_history_length() > policy.max_history_events
            or info.get_current_history_size() > policy.max_history_bytes
        )

    async def _continue_as_new(self, params: RunInput) -> None:
        """Record the exact facts, persist them, drain handlers, then start afresh with them."""
        event = compact(self._state, recorded_at=workflow.now(), manifest_hash=self._manifest_hash)
        self._state = evolve(self._state, event)
        self._outbox.append(event)
        await self._flush()
        await workflow.wait_condition(workflow.all_handlers_finished)
        carried = Continuation(
            state=self._state, state_hash=state_hash(self._state), manifest=self._manifest_()
        )
        workflow.continue_as_new(
            RunInput(run_id=params.run_id, work_order=params.work_order, continued=carried)
        )

    async def _run_step(self, step: str) -> None:
        self._emit(ev.StepStarted, step=step)
        outbox = self._take_outbox()
        try:
            result = await workflow.execute_activity(
                "model_step",
                ModelStepInput(
                    run_id=self._state.run_id,
                    step=step,
                    manifest_hash=self._manifest_hash,
                    state=context_state(self._state),
                    now=workflow.now(),
                    outbox=outbox,
                ),
                result_type=ModelStepResult,
                start_to_close_timeout=_MODEL_TIMEOUT,
                retry_policy=_MODEL_RETRY,
            )
        except ActivityError as exc:
            # Appends are idempotent: resend what may not have landed with the final flush.
            self._outbox = outbox + self._outbox
            self._emit(ev.RunFailed, reason_code="model_unavailable", message=_cause(exc))
            return
        if result.packet is not None:
            self._emit(
                ev.ContextPacketBuilt,
                step=step,
                **result.packet.model_dump(exclude={"citable_ids"}),
            )
        if result.tokens_used:
            usage = result.usage.model_dump(exclude={"reported"}) if result.usage else {}
            self._emit(
                ev.BudgetCharged,
                tokens=result.tokens_used,
                reason=f"model:{step}",
                usage_reported=bool(result.usage and result.usage.reported),
                **usage,
            )
        if result.insufficient_context is not None:
            self._emit(
                ev.RunFailed,
                reason_code="insufficient_context",
                message=result.insufficient_context,
            )
            return
        decision = result.decision
        if decision is None:
            self._emit(
                ev.DecisionRejected,
                step=step,
                reason_code="malformed_model_output",
                detail=result.rejection or "no decision",
            )
            return
        citable = result.packet.citable_ids if result.packet else ()
        problem = check_decision(step, decision, self._state, citable)
        if problem is not None:
            self._emit(
                ev.DecisionRejected,
                step=step,
                reason_code=problem.reason_code,
                detail=problem.detail,
                option=decision.type,
            )
            return
        self._emit(
            ev.DecisionRecorded,
            step=step,
            decision=decision,
            model_profile=self._manifest_().model.name,
        )
        if isinstance(decision, CallTool):
            await self._govern(step, decision.proposal)
        elif isinstance(decision, Answer) and decision.proposed_next_action is None:
            await self._propose_memory()
            self._emit(
                ev.RunCompleted,
                answer=decision.answer,
                cited_source_ids=decision.supporting_source_ids,
                claimed_operation_ids=decision.claimed_operation_ids,
            )

    async def _propose_memory(self) -> None:
        """The outcome with its receipt enters the memory lifecycle (quarantine first)."""
        fields = outcome_proposal(self._state)
        if fields is None or not workflow.patched("memory-proposal-v1"):
            return
        self._emit(ev.MemoryProposed, **fields)
        await workflow.execute_activity(
            "propose_memory",
            ProposeMemoryInput(
                principal=self._principal(), now=workflow.now(), outbox=self._take_outbox()
            ),
            start_to_close_timeout=_MODEL_TIMEOUT,
            retry_policy=_RETRY,
        )

    async def _act_on_proposal(self) -> None:
        proposal = self._state.proposed_action
        if proposal is None:  # defensive: the fold never leaves "acting" without a proposal
            raise ApplicationError("acting phase without a proposal", non_retryable=True)
        await self._govern(self._state.current_step or "", proposal)

    # ----------------------------------------------------------- governance
    async def _govern(self, step: str, proposal: ToolCallProposal) -> None:
        operation_id = f"op_{self._state.last_seq + 1}"
        verdict = self._authorize(step, proposal, operation_id)
        if verdict.kind == "needs_approval":
            outcome = await self._await_approval(
                operation_id, verdict.proposal, verdict.proposal_digest
            )
            if outcome.decision != "granted":
                return
            verdict = self._authorize(step, proposal, operation_id)  # re-checked at dispatch
        if isinstance(verdict, Deny):
            self._record_denial(step, proposal, operation_id, verdict)
        elif isinstance(verdict, Allow):
            await self._execute(operation_id, verdict)
        else:
            raise ApplicationError("approval granted but still required", non_retryable=True)

    def _authorize(self, step: str, proposal: ToolCallProposal, operation_id: str) -> Authorization:
        return authorize(
            proposal,
            self._state,
            self._manifest_(),
            self._principal(),
            workflow.now(),
            contracts=self._contracts,
            step=step,
            operation_id=operation_id,
        )

    def _record_denial(
        self, step: str, proposal: ToolCallProposal, operation_id: str, denial: Deny
    ) -> None:
        if denial.protocol_error:
            self._emit(
                ev.DecisionRejected,
                step=step,
                reason_code=denial.reason_code,
                detail=denial.detail,
                option=proposal.tool,
            )
        else:
            self._emit(
                ev.ToolCallDenied,
                operation_id=operation_id,
                tool=proposal.tool,
                reason_code=denial.reason_code,
                detail=denial.detail,
            )

    async def _await_approval(
        self,
        operation_id: str,
        proposal: ToolCallProposal,
        digest: str,
        elicitation: ElicitationRequest | None = None,
    ) -> ApprovalOutcome:
        approval_id = f"apr_{self._state.last_seq + 1}"
        ttl = timedelta(seconds=self._manifest_().approval_ttl_seconds)
        self._emit(
            ev.ApprovalRequested,
            approval_id=approval_id,
            operation_id=operation_id,
            proposal=proposal,
            proposal_digest=digest,
            requested_by=self._principal().user_id,
            approver_role="approver",
            expires_at=workflow.now() + ttl,
            elicitation=elicitation,
        )
        await self._flush()  # the approvals inbox must show the request while we wait
        try:
            await workflow.wait_condition(
                lambda: approval_id not in self._state.pending_approvals, timeout=ttl
            )
        except TimeoutError:
            self._emit(ev.ApprovalExpired, approval_id=approval_id)
        return self._state.approvals[approval_id]

    # ------------------------------------------------------------- effects
    async def _execute(self, operation_id: str, allow: Allow) -> None:
        self._emit(
            ev.ToolCallAuthorised,
            operation_id=operation_id,
            tool=allow.tool,
            tool_version=allow.tool_version,
            arguments=allow.arguments,
            arguments_digest=allow.arguments_digest,
            idempotency_key=allow.idempotency_key,
            approval_id=allow.approval_id,
        )
        contract = self._contracts[allow.tool]
        call = ToolStepInput(
            run_id=self._state.run_id,
            pack=self._work_order().pack,
            operation_id=operation_id,
            tool=allow.tool,
            arguments=allow.arguments,
            idempotency_key=allow.idempotency_key,
            principal=self._principal(),
            now=workflow.now(),
            outbox=self._take_outbox(),
            manifest_hash=self._manifest_hash,
        )
        receipt = await self._call_tool(call, contract)
        asked = declined_elicitation(receipt.model_view) if receipt is not None else None
        if receipt is not None and asked is not None and self._manifest_().pins(allow.tool):
            receipt = await self._answer_elicitation(call, contract, allow, asked, receipt)
        if receipt is not None:
            self._record_receipt(receipt)

    async def _call_tool(self, call: ToolStepInput, contract: ToolContract) -> Receipt | None:
        """The call's receipt, or ``None`` when its outcome was recorded as unknowable."""
        heartbeat = contract.heartbeat_seconds
        try:
            receipt: Receipt = await workflow.execute_activity(
                "execute_tool",
                call,
                result_type=Receipt,
                start_to_close_timeout=timedelta(seconds=contract.timeout_seconds),
                heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat else None,
                # Unlimited attempts with backoff (capped at 10 s): execute_tool reconciles a
                # write by its idempotency key before acting and a read has no effect to double,
                # so every retry is safe, and a database outage or a crashed worker must delay a
                # call, not turn it into a failure. A write nothing can reconcile runs once.
                retry_policy=_ONCE if contract.on_partial_completion == "in_doubt" else _RETRY,
            )
        except ActivityError as exc:
            if contract.on_partial_completion == "in_doubt":
                self._record_doubt(call, exc)
                return None
            return await self._reconcile(call, exc)
        return receipt

    async def _answer_elicitation(
        self,
        call: ToolStepInput,
        contract: ToolContract,
        allow: Allow,
        asked: ElicitationRequest,
        declined: Receipt,
    ) -> Receipt | None:
        """The server asked for human input and the call declined it: ask a person (the
        operation stays open), then re-run the call with exactly their answer. Without a grant
        the declined result stands; ``None`` when the re-run's outcome was recorded unknown."""
        bound_to = elicitation_approval_digest(
            call.operation_id, allow.arguments_digest, self._manifest_hash, asked
        )
        proposal = ToolCallProposal(tool=allow.tool, arguments=allow.arguments)
        outcome = await self._await_approval(call.operation_id, proposal, bound_to, asked)
        if outcome.decision != "granted" or outcome.content is None:
            return declined
        answered = call.model_copy(
            update={
                "elicitation_answers": {asked.digest: outcome.content},
                "now": workflow.now(),
                "outbox": self._take_outbox(),
            }
        )
        return await self._call_tool(answered, contract)

    def _record_doubt(self, call: ToolStepInput, exc: ActivityError) -> None:
        """Nothing can say whether the call ran: its outcome is settled as unknown, an
        unresolved error for a person (the outbox it carried is resent with the next flush)."""
        self._outbox = call.outbox + self._outbox
        self._record_receipt(self._doubt(call, exc, status="unknown"))

    def _doubt(
        self, call: ToolStepInput, exc: ActivityError, status: ReceiptStatus = "in_doubt"
    ) -> Receipt:
        return Receipt(
            operation_id=call.operation_id,
            tool=call.tool,
            tool_version="",
            status=status,
            idempotency_key=call.idempotency_key,
            error_code="outcome_unknown",
            error_message=str(exc.cause or exc),
            observed_at=workflow.now(),
        )

    async def _reconcile(self, call: ToolStepInput, exc: ActivityError) -> Receipt:
        """Outcome unknown: record it as in doubt, then ask the system of record."""
        self._emit(ev.ToolReceiptRecorded, receipt=self._doubt(call, exc))
        receipt: Receipt = await workflow.execute_activity(
            "reconcile_tool",
            # The failed call's outbox may not have landed; appends are idempotent, so resend it.
            call.model_copy(
                update={"outbox": call.outbox + self._take_outbox(), "now": workflow.now()}
            ),
            result_type=Receipt,
            start_to_close_timeout=_MODEL_TIMEOUT,
            retry_policy=_RETRY,
        )
        return receipt

    def _record_receipt(self, receipt: Receipt) -> None:
        self._emit(ev.ToolReceiptRecorded, receipt=receipt)
        for passage in receipt.evidence:
            self._emit(
                ev.EvidenceRecorded,
                operation_id=receipt.operation_id,
                **passage.model_dump(exclude={"score"}),
            )
        if receipt.status in ("failed", "unknown"):
            self._emit(
                ev.ErrorRecorded,
                error_id=f"err_{self._state.last_seq + 1}",
                code=receipt.error_code or "tool_failed",
                message=receipt.error_message or "",
                operation_id=receipt.operation_id,
            )

    # ----------------------------------------------------------- approvals
    @workflow.update
    async def decide_approval(self, decision: ApprovalDecision) -> ApprovalResult:
        refusal = check_approval_decision(
            self._state,
            decision.approval_id,
            decision.approver,
            decision.proposal_digest,
            workflow.now(),
            approve=decision.approve,
            content=decision.content,
        )
        if refusal is not None:
            self._emit(
                ev.ApprovalAttemptRefused,
                approval_id=decision.approval_id,
                attempted_by=decision.approver.user_id,
                reason_code=refusal.reason_code,
                detail=refusal.detail,
            )
            raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)
        if decision.approve:
            self._emit(
                ev.ApprovalGranted,
                approval_id=decision.approval_id,
                approver=decision.approver.user_id,
                proposal_digest=decision.proposal_digest,
                content=decision.content,
            )
        else:
            self._emit(
                ev.ApprovalRejected,
                approval_id=decision.approval_id,
                approver=decision.approver.user_id,
                reason=decision.reason,
            )
        return ApprovalResult(
            approval_id=decision.approval_id, decision="granted" if decision.approve else "rejected"
        )

    @decide_approval.validator
    def _known_approval(self, decision: ApprovalDecision) -> None:
        # Unknown ids are refused before they touch history; policy refusals are recorded.
        if (
            decision.approval_id not in self._state.pending_approvals
            and decision.approval_id not in self._state.approvals
        ):
            raise ValueError(f"no approval {decision.approval_id} in run {self._state.run_id}")

    @workflow.query
    def state(self) -> WorkingState:
        return self._state

    # ------------------------------------------------------------- helpers
    def _emit(self, kind: type[ev.Envelope], **fields: Any) -> None:
        event = kind(
            run_id=self._state.run_id or workflow.info().workflow_id,
            seq=self._state.last_seq + 1,
            recorded_at=workflow.now(),
            manifest_hash=self._manifest_hash,
            **fields,
        )
        self._state = evolve(self._state, event)  # type: ignore[arg-type]
        self._outbox.append(event)  # type: ignore[arg-type]

    def _take_outbox(self) -> list[ev.RunEvent]:
        taken, self._outbox = self._outbox, []
        return taken

    async def _flush(self) -> None:
        if not self._outbox:
            return
        events = AppendInput(events=self._take_outbox())
        # A regular activity, not a local one: its input is fixed in history by the workflow
        # task that emitted the events. A local activity commits inside a task that a crashed
        # worker may never complete; the retried task then re-emits those events with a new
        # workflow.now() and the ledger (rightly) refuses the different payload forever.
        if workflow.patched("flush-as-activity"):
            await workflow.execute_activity(
                "append_events",
                events,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=_RETRY,
            )
        else:  # runs recorded before this change replay as they ran
            await workflow.execute_local_activity(
                "append_events",
                events,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=_RETRY,
            )

    def _within_budget(self) -> bool:
        state, reason = self._state, None
        if state.remaining_steps() <= 0:
            reason = "steps"
        elif state.remaining_tokens() <= 0:
            reason = "tokens"
        elif state.started_at is not None and (workflow.now() - state.started_at) > timedelta(
            seconds=state.budget.wall_seconds
        ):
            reason = "wall_seconds"
        if reason is None:
            return True
        self._emit(
            ev.RunFailed,
            reason_code="budget_exhausted",
            message=f"the run's {reason} budget is used up",
        )
        return False

    def _final_answer(self) -> str | None:
        answer = self._state.last_answer
        return answer.answer if answer is not None and self._state.status == "completed" else None

    def _manifest_(self) -> ExecutionManifest:
        assert self._manifest is not None
        return self._manifest

    def _work_order(self) -> WorkOrder:
        assert self._state.work_order is not None
        return self._state.work_order

    def _principal(self) -> Principal:
        return self._work_order().principal


def _cause(exc: ActivityError) -> str:
    """``Type: message`` of the activity's own error, as events and people should read it."""
    cause = exc.cause
    return f"{getattr(cause, 'type', None) or 'error'}: {getattr(cause, 'message', None) or exc}"
