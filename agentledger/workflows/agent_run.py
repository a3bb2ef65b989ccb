"""The durable agent run: project state from events, build a packet, decide, govern, act.

The workflow orchestrates; the domain decides. ``Run`` (``_core``) holds the recording and the
manifest; ``ApprovalDesk`` waits for people, ``ToolCalls`` runs authorised calls and ``Gate``
authorizes proposals; this module holds the run loop, continue-as-new and the handlers.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import (
        ActivityQueues,
        ModelStepInput,
        PrepareRunInput,
        ProposeMemoryInput,
        ResumeInput,
    )
    from agentledger.activities.surface import MemorySteps, RunSteps
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.claims import delivered_text
    from agentledger.domain.compaction import can_compact, carried_size_problem, compact
    from agentledger.domain.decisions import Answer, AskUser, CallTool, Delegate
    from agentledger.domain.fold import state_hash
    from agentledger.domain.handoffs import HandoffOrigin
    from agentledger.domain.limits import (
        bounded_work_order,
        undecodable_work_order,
        work_order_problem,
    )
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
    from agentledger.domain.window import WINDOW
    from agentledger.domain.workorder import WorkOrder
    from agentledger.workflows.messages import (
        ApprovalDecision,
        ApprovalResult,
        CancelOrder,
        CancelResult,
        Continuation,
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
    LOCAL_TIMEOUT,
    MODEL_RETRY,
    MODEL_TIMEOUT,
    RETRY,
    Run,
    cause,
)
from agentledger.workflows._effects import ToolCalls
from agentledger.workflows._governance import Gate
from agentledger.workflows._handoffs import Handoffs
from agentledger.workflows._operators import OperatorDesk
from agentledger.workflows._start import started_work_order
from agentledger.workflows._tracing import (
    MANIFEST_HASH,
    OUTCOME,
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

    @workflow.run
    async def run(self, raw: RawValue) -> RunOutcome:
        run = self._run
        with span("agentledger.run", of_run(run)) as traced:
            params = self._decoded(raw)
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
            await self._resume(params)
        else:
            await self._start(params)
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
                await self._continue_as_new(params)

    def _decoded(self, raw: RawValue) -> RunInput | None:
        """The run's input, decoded here instead of by the SDK: a payload that no model accepts
        (nested deeper than the JSON parser goes) is recorded as a refused run, where the SDK's
        own decoding would fail the workflow task on every attempt, forever."""
        try:
            params: RunInput = workflow.payload_converter().from_payload(raw.payload, RunInput)
        except ValueError as exc:  # pydantic's ValidationError is one
            problem = f"the work order cannot be decoded: {str(exc).splitlines()[0][:300]}"
            self._refuse(undecodable_work_order(problem), "work_order_refused", problem)
            return None
        return params

    async def _queues(self, params: RunInput) -> ActivityQueues:
        """Where the run's model and tool calls go: the deployment's choice, asked of the
        workflow's own worker (a local activity, recorded), never the starter's. A queue is
        where a call's arguments and the principal's authority are sent: a starter who named
        one could serve it."""
        # Every patch of the run's first task is asked before this local activity: a patch
        # marker recorded after a local activity's marker fails a query's replay of the task.
        if not workflow.patched(patches.DEPLOYMENT_QUEUES):
            return params.queues or self._run.queues  # how runs started before it chose
        return await workflow.execute_local_activity_method(
            RunSteps.activity_queues, start_to_close_timeout=LOCAL_TIMEOUT
        )

    def _refuse(self, work_order: WorkOrder, reason_code: str, message: str) -> None:
        """The run recorded as started and failed, under no manifest."""
        run = self._run
        run.record(ev.RunStarted(**run.stamp(), work_order=work_order, policy_version=""))
        run.fail(reason_code, message)

    async def _start(self, params: RunInput) -> None:
        if workflow.patched(patches.WORK_ORDER_LIMITS):
            problem = work_order_problem(params.work_order)
            if problem is not None:  # refused before any activity, recorded in a size that fits
                self._refuse(bounded_work_order(params.work_order), "work_order_refused", problem)
                return
        forged = params.run_id != workflow.info().workflow_id
        if forged and workflow.patched(patches.RUN_ID_IS_WORKFLOW_ID):
            # The input's run id names the attempt and is what a child's origin is checked
            # under: a starter may not borrow another run's (a delegated child's) for its own.
            mismatch = f"the input names run {params.run_id[:200]}, not this workflow's id"
            self._refuse(bounded_work_order(params.work_order), "run_id_mismatch", mismatch)
            return
        self._run.queues = await self._queues(params)
        with span("agentledger.prepare", of_run(self._run, pack=params.work_order.pack)) as traced:
            try:
                manifest = await workflow.execute_activity_method(
                    RunSteps.prepare_run,
                    PrepareRunInput(
                        run_id=params.run_id,
                        work_order=params.work_order,
                        handoff_origin=params.handoff,
                        schedule_id=params.schedule_id,
                    ),
                    start_to_close_timeout=MODEL_TIMEOUT,
                    retry_policy=RETRY,
                )
            except ActivityError as exc:
                # A final refusal (an unknown provider, an MCP server that is not the pinned one).
                traced.set_attribute(OUTCOME, "preparation_failed")
                self._refuse(params.work_order, "preparation_failed", cause(exc))
                return
            traced.set_attributes({MANIFEST_HASH: manifest.hash, OUTCOME: "prepared"})
        run = self._run
        run.pin_manifest(manifest, params.work_order.pack)
        started = await started_work_order(params, manifest)
        if isinstance(started, ApprovalRefusal):  # the requester's signature does not hold
            self._refuse(params.work_order, started.reason_code, started.detail)
            return
        run.record(
            ev.RunStarted(**run.stamp(), work_order=started, policy_version=manifest.policy_version)
        )

    async def _resume(self, params: RunInput) -> None:
        """Take up the state a previous execution carried, once the ledger vouches for it: a
        continuation is workflow input, and anyone who can start a workflow can write one (a
        state with a pending refund, a manifest trusting their own key)."""
        carried = params.continued
        assert carried is not None
        if state_hash(carried.state) != carried.state_hash:
            raise _carried_mismatch("the state carried across continue-as-new does not match")
        manifest = carried.manifest
        checked = workflow.patched(patches.CHECKED_CONTINUATION)
        self._run.queues = await self._queues(params)
        if checked:
            try:
                manifest = await workflow.execute_activity_method(
                    RunSteps.resume_run,
                    ResumeInput(
                        run_id=workflow.info().workflow_id,
                        state_hash=carried.state_hash,
                        manifest_hash=carried.manifest.hash,
                    ),
                    start_to_close_timeout=MODEL_TIMEOUT,
                    retry_policy=RETRY,
                )
            except ActivityError as exc:
                raise _carried_mismatch(cause(exc)) from None
        self._run.rec.state = carried.state
        self._run.pin_manifest(manifest, self._run.work_order.pack)

    async def _continue_as_new(self, params: RunInput) -> None:
        """Record the exact facts, persist them, drain handlers, then start afresh with them.

        The state is bounded to a window first (``domain.window``), so what a run carries stays
        the same size however long it goes on; runs compacted before that carried everything."""
        run = self._run
        window = None
        if workflow.patched(patches.BOUNDED_WINDOW):
            window = run.manifest.compaction.window or WINDOW
        now, manifest_hash = workflow.now(), run.manifest_hash
        run.record(compact(run.state, recorded_at=now, manifest_hash=manifest_hash, window=window))
        too_large = carried_size_problem(len(run.state.model_dump_json()))
        if too_large is not None:
            # Ends the run (and the loop) cleanly; a refused payload would fail task after task.
            run.fail("state_too_large", too_large)
            return
        await run.flush()
        await workflow.wait_condition(workflow.all_handlers_finished)
        while run.unsent:  # a reply or an approval taken while the last flush ran
            await run.flush()
            await workflow.wait_condition(workflow.all_handlers_finished)
        carried = Continuation(
            state=run.state, state_hash=state_hash(run.state), manifest=run.manifest
        )
        workflow.continue_as_new(
            RunInput(
                run_id=params.run_id,
                work_order=params.work_order,
                continued=carried,
                handoff=params.handoff,
            )
        )

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
                start_to_close_timeout=MODEL_TIMEOUT,
                retry_policy=MODEL_RETRY,
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


def _carried_mismatch(problem: str) -> ApplicationError:
    """Fails the execution (not its task): no worker could take this continuation up."""
    return ApplicationError(problem, type="carried_state_mismatch", non_retryable=True)
