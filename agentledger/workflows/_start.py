"""A new run's start, taken only as its requester signed it and as the worker planned it.

Anyone who reaches the Temporal frontend can start a workflow, so a run's input proves nothing
by itself. A new run therefore carries its requester's signed assertion (``RunInput.
requester_assertion``): a key the run pinned says that the work order's requester asks for
exactly this work order (its digest) under this run id, now. It is checked here, against the
manifest ``prepare_run`` froze, as approvals and replies are; a start signed on behalf of a
caller another issuer vouched for is checked against the directory's binding of that issuer.
Two starts carry no signature and need none: a delegated child (``prepare_run`` found the
delegation in its parent's ledger) and a schedule's firing (``prepare_run`` found the schedule,
made with exactly this work order, in the ledger's journal).

The work order the run records is then narrowed by what the worker froze: the budgets to the
profile's ceiling, the grants to those ``prepare_run`` planned from the request and requester
(a work order may only narrow them; wider ones were refused there).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.assertions import Expected, foreign_speaker, start_audience
    from agentledger.domain.manifest import ExecutionManifest
    from agentledger.domain.run_loop import narrowed_budget
    from agentledger.domain.workorder import WorkOrder, work_order_digest
    from agentledger.workflows.messages import RunInput

from agentledger.workflows import _patches as patches
from agentledger.workflows._assertions import check_assertion
from agentledger.workflows._directory import directory_refusal, look_up_principal


async def started_work_order(
    params: RunInput, manifest: ExecutionManifest
) -> WorkOrder | ApprovalRefusal:
    """The work order the run records as started, or why its start is refused."""
    work_order = params.work_order
    if workflow.patched(patches.BUDGET_CEILING):
        # The frozen profile's budgets are the ceiling; a work order may only narrow them.
        budget = narrowed_budget(work_order.budget, manifest.budgets)
        work_order = work_order.model_copy(update={"budget": budget})
    refusal = await _requester_refusal(params, manifest)
    if refusal is not None:
        return refusal
    if manifest.work_order_grants is not None and workflow.patched(patches.PLANNED_GRANTS):
        work_order = work_order.model_copy(update={"grants": manifest.work_order_grants})
    return work_order


async def _requester_refusal(
    params: RunInput, manifest: ExecutionManifest
) -> ApprovalRefusal | None:
    """Why the requester's signature does not start this run (``None``: it does, or this
    start needs none)."""
    if params.handoff is not None or params.schedule_id is not None or not manifest.trusted_keys:
        return None
    if params.fork is not None:
        return None  # signed by its operator instead (``workflows._forks``)
    if not workflow.patched(patches.SIGNED_REQUESTER):
        return None
    order = params.work_order
    proven = check_assertion(
        params.requester_assertion,
        manifest.trusted_keys,
        Expected(
            audience=start_audience(params.run_id),
            digest=work_order_digest(order),
            decision="start",
            what=f"the start of run {params.run_id[:200]} with this work order",
        ),
        claimed_id=order.principal.user_id,
        now=workflow.now(),
    )
    if isinstance(proven, ApprovalRefusal):
        return proven
    foreign = foreign_speaker(proven, manifest.trusted_keys)
    if foreign is None:
        return None
    found = await look_up_principal(proven.subject, proven, foreign)
    return directory_refusal(found, proven.subject, foreign, "unknown_requester")
