"""A fork's start: its operator proven, then its first state taken from the original's ledger.

A fork is started by an operator, not by its work order's requester, so its signed start is the
operator's: a key the run pinned says that ``origin.operator_id`` starts exactly this work order
from exactly this origin (run, seq, state hash) under this run id, now; the directory then
says whether they hold the ``forker`` role in the run's tenant. After ``run_started`` the
``fork_point`` activity reads the state at the origin from the original's ledger (a boundary,
with the hash the operator signed) and the run records ``run_forked`` with those exact facts:
the fold goes on from there (``domain.forks``).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import ForkPointInput
    from agentledger.activities.surface import RunSteps
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.assertions import Expected, VerifiedAssertion, foreign_speaker
    from agentledger.domain.fold import state_hash
    from agentledger.domain.forks import ForkOrigin, fork_audience, fork_digest, fork_refusal
    from agentledger.domain.manifest import ExecutionManifest
    from agentledger.domain.principal import Principal
    from agentledger.workflows.messages import RunInput

from agentledger.workflows._assertions import check_assertion
from agentledger.workflows._core import MODEL_TIMEOUT, RETRY, Run
from agentledger.workflows._directory import directory_refusal, look_up_principal

Forker = tuple[VerifiedAssertion, Principal]
"""Who forked: their proven assertion and the directory's entry for them."""


async def proven_forker(
    params: RunInput, origin: ForkOrigin, manifest: ExecutionManifest
) -> Forker | ApprovalRefusal:
    """The operator who signed this fork, if they may fork a run of its work order."""
    run_id, order = params.run_id, params.work_order
    if not manifest.trusted_keys:
        return ApprovalRefusal(reason_code="unsigned_run", detail="a fork is signed; none pinned")
    proven = check_assertion(
        params.requester_assertion,
        manifest.trusted_keys,
        Expected(
            audience=fork_audience(run_id),
            digest=fork_digest(order, origin),
            decision="fork",
            what=f"the fork of run {origin.run_id[:200]} at #{origin.seq} as {run_id[:200]}",
        ),
        claimed_id=origin.operator_id,
        now=workflow.now(),
    )
    if isinstance(proven, ApprovalRefusal):
        return proven
    foreign = foreign_speaker(proven, manifest.trusted_keys)
    found = await look_up_principal(proven.subject, proven, foreign)
    refusal = directory_refusal(found, proven.subject, foreign, "unknown_operator")
    if refusal is not None:
        return refusal
    assert found.principal is not None
    return fork_refusal(found.principal, order) or (proven, found.principal)


async def take_fork_point(run: Run, origin: ForkOrigin, forker: Forker) -> None:
    """Record ``run_forked`` with the original's state at the origin, or fail the run with
    the reason the ledger gave (no such event, mid-operation, another state)."""
    try:
        state = await workflow.execute_activity_method(
            RunSteps.fork_point,
            ForkPointInput(origin=origin),
            start_to_close_timeout=MODEL_TIMEOUT,
            retry_policy=RETRY,
        )
    except ActivityError as exc:
        found = exc.cause
        run.fail(
            getattr(found, "type", None) or "fork_refused", str(getattr(found, "message", exc))
        )
        return
    proven, operator = forker
    run.record(
        ev.RunForked(
            **run.stamp(),
            origin_run_id=origin.run_id,
            origin_seq=origin.seq,
            facts=state.facts(),
            facts_hash=state_hash(state),
            dry=origin.dry,
            forked_by=proven.subject,
            operator_entry=operator,
            assertion=proven,
        )
    )
