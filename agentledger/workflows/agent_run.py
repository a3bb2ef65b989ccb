"""The durable agent run: project state from events, build a packet, decide, govern, act.

The run loop, continue-as-new and the workflow's handlers live here; what they share
(state, outbox, manifest) is ``_core``, then ``_approvals``, ``_effects`` (tool calls and
receipts) and ``_governance`` (the authority gate) build on it, in that order.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    # Pure domain code and pydantic models: safe to share with the sandbox, and re-importing
    # pydantic per workflow run would cost far more than the run itself.
    from agentledger.activities.memory import ProposeMemoryInput
    from agentledger.activities.messages import ModelStepInput, ModelStepResult, PrepareRunInput
    from agentledger.domain import events as ev
    from agentledger.domain.compaction import (
        can_compact,
        carried_size_problem,
        compact,
        context_state,
    )
    from agentledger.domain.decisions import Answer, CallTool
    from agentledger.domain.fold import evolve, state_hash
    from agentledger.domain.limits import (
        bounded_work_order,
        undecodable_work_order,
        work_order_problem,
    )
    from agentledger.domain.manifest import ExecutionManifest
    from agentledger.domain.memory import outcome_proposal
    from agentledger.domain.run_loop import (
        budget_exhausted,
        check_decision,
        narrowed_budget,
        next_step,
    )
    from agentledger.domain.state import WorkingState
    from agentledger.domain.workorder import WorkOrder

from agentledger.workflows._approvals import ApprovalDecision, ApprovalResult
from agentledger.workflows._core import MODEL_TIMEOUT, RETRY, cause
from agentledger.workflows._governance import Governance

# Model calls: Temporal owns retries (provider SDK retries are off); a configuration error or a
# rejected request is final, and a provider that stays down ends the run instead of looping.
MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
    non_retryable_error_types=["ModelConfigError", "ModelRequestRejected", "UnknownModelProvider"],
)

__all__ = ["AgentRunWorkflow", "ApprovalDecision", "ApprovalResult", "Continuation", "RunInput"]


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


@workflow.defn(name="AgentRun")
class AgentRunWorkflow(Governance):
    @workflow.run
    async def run(self, raw: RawValue) -> dict[str, Any]:
        params = self._decoded(raw)
        if params is None:
            await self._flush()
            return {"status": self._state.status, "answer": None}
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

    def _decoded(self, raw: RawValue) -> RunInput | None:
        """The run's input, decoded here instead of by the SDK: a payload that no model accepts
        (nested deeper than the JSON parser goes) is recorded as a refused run, where the SDK's
        own decoding would fail the workflow task on every attempt, forever."""
        try:
            params: RunInput = workflow.payload_converter().from_payload(raw.payload, RunInput)
        except ValueError as exc:  # pydantic's ValidationError is one
            problem = f"the work order cannot be decoded: {str(exc).splitlines()[0][:300]}"
            self._emit(ev.RunStarted, work_order=undecodable_work_order(problem), policy_version="")
            self._emit(ev.RunFailed, reason_code="work_order_refused", message=problem)
            return None
        return params

    async def _start(self, params: RunInput) -> None:
        if workflow.patched("work-order-limits"):
            problem = work_order_problem(params.work_order)
            if problem is not None:  # refused before any activity, recorded in a size that fits
                self._emit(
                    ev.RunStarted,
                    work_order=bounded_work_order(params.work_order),
                    policy_version="",
                )
                self._emit(ev.RunFailed, reason_code="work_order_refused", message=problem)
                return
        try:
            manifest: ExecutionManifest = await workflow.execute_activity(
                "prepare_run",
                PrepareRunInput(run_id=params.run_id, work_order=params.work_order),
                result_type=ExecutionManifest,
                start_to_close_timeout=MODEL_TIMEOUT,
                retry_policy=RETRY,
            )
        except ActivityError as exc:
            # A final refusal (an unknown provider, an MCP server that is not the pinned one):
            # the run is recorded as started and failed, under no manifest, and ends cleanly.
            self._emit(ev.RunStarted, work_order=params.work_order, policy_version="")
            self._emit(ev.RunFailed, reason_code="preparation_failed", message=cause(exc))
            return
        self._pin_manifest(manifest, params.work_order.pack)
        work_order = params.work_order
        if workflow.patched("budget-ceiling"):
            # The frozen profile's budgets are the ceiling; a work order may only narrow them.
            budget = narrowed_budget(work_order.budget, manifest.budgets)
            work_order = work_order.model_copy(update={"budget": budget})
        self._emit(ev.RunStarted, work_order=work_order, policy_version=manifest.policy_version)

    def _resume(self, carried: Continuation) -> None:
        if state_hash(carried.state) != carried.state_hash:
            raise ApplicationError(
                "the state carried across continue-as-new does not match its hash",
                type="carried_state_mismatch",
                non_retryable=True,
            )
        self._state = carried.state
        self._pin_manifest(carried.manifest, self._work_order().pack)

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
        too_large = carried_size_problem(len(self._state.model_dump_json()))
        if too_large is not None:
            # Ends the run (and the loop) cleanly; a refused payload would fail task after task.
            self._emit(ev.RunFailed, reason_code="state_too_large", message=too_large)
            return
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
        sent = context_state(self._state)
        too_large = carried_size_problem(len(sent.model_dump_json()))
        if too_large is not None:
            self._emit(ev.RunFailed, reason_code="state_too_large", message=too_large)
            return
        outbox = self._take_outbox()
        try:
            result = await workflow.execute_activity(
                "model_step",
                ModelStepInput(
                    run_id=self._state.run_id,
                    step=step,
                    manifest_hash=self._manifest_hash,
                    state=sent,
                    now=workflow.now(),
                    outbox=outbox,
                ),
                result_type=ModelStepResult,
                start_to_close_timeout=MODEL_TIMEOUT,
                retry_policy=MODEL_RETRY,
            )
        except ActivityError as exc:
            # Appends are idempotent: resend what may not have landed with the final flush.
            self._outbox = outbox + self._outbox
            self._emit(ev.RunFailed, reason_code="model_unavailable", message=cause(exc))
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
            start_to_close_timeout=MODEL_TIMEOUT,
            retry_policy=RETRY,
        )

    def _within_budget(self) -> bool:
        reason = budget_exhausted(self._state, workflow.now())
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

    # ------------------------------------------------------------ handlers
    @workflow.update
    async def decide_approval(self, decision: ApprovalDecision) -> ApprovalResult:
        return await self._decide(decision)

    @decide_approval.validator
    def _known_approval(self, decision: ApprovalDecision) -> None:
        self._check_known(decision)

    @workflow.query
    def state(self) -> WorkingState:
        return self._state
