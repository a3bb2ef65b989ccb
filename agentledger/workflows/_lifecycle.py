"""How a run begins and goes on: its input decoded (a payload no model accepts is a refused
run, not a failing task), a new run prepared and started (its work order's limits, its run id,
the manifest the worker prepares, its requester's signature), a continuation taken up once the
ledger vouches for it, and continue-as-new with the exact facts."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import ActivityQueues, PrepareRunInput, ResumeInput
    from agentledger.activities.surface import RunSteps
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.compaction import carried_size_problem, compact
    from agentledger.domain.fold import state_hash
    from agentledger.domain.limits import (
        bounded_work_order,
        undecodable_work_order,
        work_order_problem,
    )
    from agentledger.domain.manifest import ExecutionManifest
    from agentledger.domain.window import WINDOW
    from agentledger.domain.workorder import WorkOrder
    from agentledger.workflows.messages import Continuation, RunInput

from agentledger.workflows import _patches as patches
from agentledger.workflows._core import LOCAL_TIMEOUT, MODEL_TIMEOUT, RETRY, Run, cause
from agentledger.workflows._forks import Forker, proven_forker, take_fork_point
from agentledger.workflows._start import started_work_order
from agentledger.workflows._tracing import MANIFEST_HASH, OUTCOME, of_run, span


class Lifecycle:
    """A run's beginning (new, or continued) and its continue-as-new."""

    def __init__(self, run: Run) -> None:
        self._run = run

    def decoded(self, raw: RawValue) -> RunInput | None:
        """The run's input, decoded here instead of by the SDK: a payload that no model accepts
        (nested deeper than the JSON parser goes) is recorded as a refused run, where the SDK's
        own decoding would fail the workflow task on every attempt, forever."""
        try:
            params: RunInput = workflow.payload_converter().from_payload(raw.payload, RunInput)
        except ValueError as exc:  # pydantic's ValidationError is one
            problem = f"the work order cannot be decoded: {str(exc).splitlines()[0][:300]}"
            self.refuse(undecodable_work_order(problem), "work_order_refused", problem)
            return None
        return params

    async def queues(self, params: RunInput) -> ActivityQueues:
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

    def refuse(self, work_order: WorkOrder, reason_code: str, message: str) -> None:
        """The run recorded as started and failed, under no manifest."""
        run = self._run
        run.record(ev.RunStarted(**run.stamp(), work_order=work_order, policy_version=""))
        run.fail(reason_code, message)

    async def start(self, params: RunInput) -> None:
        if self._refused_input(params):
            return
        self._run.queues = await self.queues(params)
        manifest = await self._prepared(params)
        if manifest is None:
            return
        run = self._run
        run.pin_manifest(manifest, params.work_order.pack)
        forker: Forker | None = None
        if params.fork is not None:  # started by its operator, not its requester
            proven = await proven_forker(params, params.fork, manifest)
            if isinstance(proven, ApprovalRefusal):
                self.refuse(params.work_order, proven.reason_code, proven.detail)
                return
            forker = proven
        started = await started_work_order(params, manifest)
        if isinstance(started, ApprovalRefusal):  # the requester's signature does not hold
            self.refuse(params.work_order, started.reason_code, started.detail)
            return
        run.record(
            ev.RunStarted(**run.stamp(), work_order=started, policy_version=manifest.policy_version)
        )
        if params.fork is not None and forker is not None:
            await take_fork_point(run, params.fork, forker)

    def _refused_input(self, params: RunInput) -> bool:
        """Whether the input was refused (and recorded) before any activity."""
        if workflow.patched(patches.WORK_ORDER_LIMITS):
            problem = work_order_problem(params.work_order)
            if problem is not None:  # recorded in a size that fits
                self.refuse(bounded_work_order(params.work_order), "work_order_refused", problem)
                return True
        forged = params.run_id != workflow.info().workflow_id
        if forged and workflow.patched(patches.RUN_ID_IS_WORKFLOW_ID):
            # The input's run id names the attempt and is what a child's origin is checked
            # under: a starter may not borrow another run's (a delegated child's) for its own.
            mismatch = f"the input names run {params.run_id[:200]}, not this workflow's id"
            self.refuse(bounded_work_order(params.work_order), "run_id_mismatch", mismatch)
            return True
        return False

    async def _prepared(self, params: RunInput) -> ExecutionManifest | None:
        """The attempt's manifest as the worker froze it; ``None``: refused (recorded)."""
        with span("agentledger.prepare", of_run(self._run, pack=params.work_order.pack)) as traced:
            try:
                manifest = await workflow.execute_activity_method(
                    RunSteps.prepare_run,
                    PrepareRunInput(
                        run_id=params.run_id,
                        work_order=params.work_order,
                        handoff_origin=params.handoff,
                        schedule_id=params.schedule_id,
                        fork=params.fork,
                    ),
                    start_to_close_timeout=MODEL_TIMEOUT,
                    retry_policy=RETRY,
                )
            except ActivityError as exc:
                # A final refusal (an unknown provider, an MCP server that is not the pinned one).
                traced.set_attribute(OUTCOME, "preparation_failed")
                self.refuse(params.work_order, "preparation_failed", cause(exc))
                return None
            traced.set_attributes({MANIFEST_HASH: manifest.hash, OUTCOME: "prepared"})
        return manifest

    async def resume(self, params: RunInput) -> None:
        """Take up the state a previous execution carried, once the ledger vouches for it: a
        continuation is workflow input, and anyone who can start a workflow can write one (a
        state with a pending refund, a manifest trusting their own key)."""
        carried = params.continued
        assert carried is not None
        if state_hash(carried.state) != carried.state_hash:
            raise _carried_mismatch("the state carried across continue-as-new does not match")
        manifest = carried.manifest
        checked = workflow.patched(patches.CHECKED_CONTINUATION)
        self._run.queues = await self.queues(params)
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

    async def continue_as_new(self, params: RunInput) -> None:
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


def _carried_mismatch(problem: str) -> ApplicationError:
    """Fails the execution (not its task): no worker could take this continuation up."""
    return ApplicationError(problem, type="carried_state_mismatch", non_retryable=True)
