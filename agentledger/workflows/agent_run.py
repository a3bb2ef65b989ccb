"""The durable agent run: project state from events, build a packet, decide, govern, act.

The workflow orchestrates; the domain decides. ``Run`` (``_core``) holds the recording and the
manifest; ``Lifecycle`` starts, resumes and continues it as new; ``ApprovalDesk`` waits for
people, ``ToolCalls`` runs authorised calls, ``Gate`` authorizes proposals, ``Conversation`` and
``OperatorDesk`` take customers' and operators' messages; this module holds the run loop, its
steps and the handlers.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import (
        ModelStepInput,
        ProposeMemoryInput,
    )
    from agentledger.activities.surface import MemorySteps, RunSteps
    from agentledger.domain import events as ev
    from agentledger.domain.claims import delivered_text
    from agentledger.domain.compaction import can_compact
    from agentledger.domain.decisions import Answer, AskUser, CallTool, Delegate
    from agentledger.domain.handoffs import HandoffOrigin
    from agentledger.domain.memory import outcome_proposal
    from agentledger.domain.model_calls import ModelStepResult
    from agentledger.domain.run_loop import next_step
    from agentledger.domain.state import WorkingState
    from agentledger.domain.steps import (
        after_model_step,
        complete,
        start_step,
        within_budget,
    )
    from agentledger.domain.workorder import WorkOrder
    from agentledger.workflows.messages import (
        ApprovalDecision,
        ApprovalResult,
        CancelOrder,
        CancelResult,
        Reply,
        ReplyResult,
        RunInput,
        RunOutcome,
        SteerOrder,
        SteerResult,
    )

from agentledger.workflows import _patches as patches
from agentledger.workflows._approvals import ApprovalDesk
from agentledger.workflows._conversation import Conversation
from agentledger.workflows._core import (
    MODEL_HEARTBEAT,
    MODEL_RETRY,
    MODEL_TIMEOUT,
    RETRY,
    Run,
    cause,
)
from agentledger.workflows._effects import ToolCalls
from agentledger.workflows._governance import Gate
from agentledger.workflows._handoffs import Handoffs
from agentledger.workflows._lifecycle import Lifecycle
from agentledger.workflows._operators import OperatorDesk
from agentledger.workflows._tracing import (
    log_outcome,
    of_run,
    span,
    step_outcome,
)


@workflow.defn(name="AgentRun")
class AgentRunWorkflow:
    def __init__(self) -> None:
        self._run = Run()
        self._approvals = ApprovalDesk(self._run)
        self._gate = Gate(self._run, self._approvals, ToolCalls(self._run, self._approvals))
        self._conversation = Conversation(self._run)
        self._handoffs = Handoffs(self._run, self._child_input)
        self._operators = OperatorDesk(self._run)
        self._lifecycle = Lifecycle(self._run)

    @workflow.run
    async def run(self, raw: RawValue) -> RunOutcome:
        run = self._run
        with span("agentledger.run", of_run(run)) as traced:
            params = self._lifecycle.decoded(raw)
            try:
                if params is not None:
                    await self._run_from(params)
            except asyncio.CancelledError:
                await self._record_cancelled()
                raise
            await run.flush()
            await workflow.wait_condition(workflow.all_handlers_finished)  # a cancel's answer
            traced.set_attributes(ended := of_run(run, outcome=run.state.status))
            log_outcome(run, "run", ended)
        return self._outcome()

    async def _run_from(self, params: RunInput) -> None:
        if params.continued is not None:
            await self._lifecycle.resume(params)
        else:
            await self._lifecycle.start(params)
        await self._loop(params)

    async def _record_cancelled(self) -> None:
        """Cancelled (a parent's cancellation reaches its child this way): the end is recorded,
        and approvals still pending expire with the run. Runs from before handoffs ended
        unrecorded."""
        run = self._run
        if not workflow.patched(patches.HANDOFFS) or run.state.status != "running":
            return
        run.expire_pending()
        run.fail("cancelled", "the run was cancelled")
        await run.flush()

    def _outcome(self) -> RunOutcome:
        run = self._run
        outcome = RunOutcome(status=run.state.status, answer=self._final_answer())
        if workflow.info().parent is None:
            return outcome
        return outcome.model_copy(update={"reason_code": run.rec.failure, "used": run.state.used})

    def _child_input(self, run_id: str, order: WorkOrder, origin: HandoffOrigin) -> RunInput:
        return RunInput(run_id=run_id, work_order=order, queues=self._run.queues, handoff=origin)

    async def _loop(self, params: RunInput) -> None:
        run = self._run
        while not self._operators.end_if_cancelled():
            self._conversation.take_if_interrupting()
            step = next_step(run.state, run.manifest.step_graph)
            if step is None and run.state.awaiting is not None:
                closing = await self._conversation.wait()
                if closing is not None:
                    await self._finish(closing)
            elif step is None:
                await self._gate.act_on_proposal()
            elif not within_budget(run.rec, workflow.now()):
                break
            else:
                await self._run_step(step)
            if run.history_too_long() and can_compact(run.state):
                await self._lifecycle.continue_as_new(params)

    async def _run_step(self, step: str) -> None:
        run = self._run
        sent = start_step(run.rec, workflow.now(), step)
        if sent is None:
            return
        with span("agentledger.step", of_run(run, step=step)) as traced:
            result = await self._model_step(step, sent)
            decided = None
            if result is not None:
                decided = after_model_step(run.rec, workflow.now(), step, result, run.manifest)
            traced.set_attributes(outcome := step_outcome(run.rec.outbox))
            log_outcome(run, f"step {step}", outcome)
            await self._act(step, decided)

    async def _model_step(self, step: str, sent: WorkingState) -> ModelStepResult | None:
        """The model step's result; ``None`` when the model stayed unavailable (run failed)."""
        run = self._run
        outbox = run.take_outbox()
        try:
            result = await workflow.execute_activity_method(
                RunSteps.model_step,
                ModelStepInput(
                    run_id=run.state.run_id,
                    step=step,
                    manifest_hash=run.manifest_hash,
                    state=sent,
                    now=workflow.now(),
                    outbox=outbox,
                ),
                task_queue=run.queues.model,
                start_to_close_timeout=timedelta(seconds=run.manifest.model.step_seconds()),
                heartbeat_timeout=MODEL_HEARTBEAT,
                retry_policy=MODEL_RETRY,
                priority=run.fair_share,
            )
        except ActivityError as exc:
            run.resend(outbox)
            run.fail("model_unavailable", cause(exc))
            return None
        run.confirm(outbox)
        return result

    async def _act(self, step: str, decided: CallTool | AskUser | Answer | Delegate | None) -> None:
        run = self._run
        if run.stopping:  # the decision stays recorded; nothing acts on it
            return
        if isinstance(decided, Delegate):
            if not workflow.patched(patches.HANDOFFS):  # no recorded run ever delegated
                raise ApplicationError("delegation without the handoffs patch", non_retryable=True)
            await self._handoffs.delegate(step, decided)
        elif isinstance(decided, CallTool):
            await self._gate.govern(step, decided.proposal)
        elif isinstance(decided, AskUser):
            self._conversation.ask(decided.question)
        elif decided is not None:
            if run.manifest.conversation is None:
                await self._finish(decided)
            elif (
                closing := self._conversation.after_answer(delivered_text(decided, run.state))
            ) is not None:
                await self._finish(closing)

    async def _finish(self, answer: Answer) -> None:
        await self._propose_memory()
        price = self._run.manifest.model.price
        complete(self._run.rec, workflow.now(), answer, price.currency if price else None)

    async def _propose_memory(self) -> None:
        """The outcome with its receipt enters the memory lifecycle (quarantine first)."""
        run = self._run
        proposed = outcome_proposal(run.state)
        if proposed is None or not workflow.patched(patches.MEMORY_PROPOSAL):
            return
        run.record(ev.MemoryProposed(**run.stamp(), **proposed.model_dump()))
        outbox = run.take_outbox()
        await workflow.execute_activity_method(
            MemorySteps.propose_memory,
            ProposeMemoryInput(principal=run.principal, now=workflow.now(), outbox=outbox),
            start_to_close_timeout=MODEL_TIMEOUT,
            retry_policy=RETRY,
        )
        run.confirm(outbox)

    def _final_answer(self) -> str | None:
        """What the run answered: as its customer received it (with the runtime's confirmation
        of each claimed effect), or for a child run the bare output its parent parses."""
        run = self._run
        answer = run.state.last_answer
        if answer is None or run.state.status != "completed":
            return None
        if run.manifest.handoff_origin is not None:
            return answer.answer
        return delivered_text(answer, run.state)

    # ------------------------------------------------------------ handlers
    @workflow.update
    async def decide_approval(self, decision: ApprovalDecision) -> ApprovalResult:
        return await self._approvals.decide(decision)

    @decide_approval.validator
    def _known_approval(self, decision: ApprovalDecision) -> None:
        self._approvals.check_known(decision)

    @workflow.update
    async def reply(self, reply: Reply) -> ReplyResult:
        """The customer's message to a run waiting on them (``agentledger reply``)."""
        return await self._conversation.reply(reply)

    @reply.validator
    def _can_reply(self, reply: Reply) -> None:
        self._conversation.check(reply)

    @workflow.update
    async def cancel_run(self, order: CancelOrder) -> CancelResult:
        """An operator's signed cancel (``agentledger cancel``); returns how the run ended."""
        return await self._operators.cancel(order)

    @cancel_run.validator
    def _can_cancel(self, order: CancelOrder) -> None:
        self._operators.check(order)

    @workflow.update
    async def steer_run(self, order: SteerOrder) -> SteerResult:
        """An operator's signed instruction (``agentledger steer``); later packets carry it."""
        return await self._operators.steer(order)

    @steer_run.validator
    def _can_steer(self, order: SteerOrder) -> None:
        self._operators.check(order)

    @workflow.query
    def state(self) -> WorkingState:
        return self._run.state
