"""Identity comes from a signature and the directory, never from a payload: forged approvers,
claimed roles, unknown requesters and floods of refused attempts, sent the way an attacker would
send them (the raw SDK and the bare `temporal` binary), not through the CLI's friendly checks.
What an assertion must say is in ``test_signed_approvals``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentledger.app import runs as client_ops
from agentledger.app.devserver import temporal_binary
from agentledger.app.registry import get_pack
from agentledger.domain.approvals import MAX_RECORDED_REFUSALS
from agentledger.domain.events import ApprovalAttemptRefused, ApprovalGranted, RunFailed
from agentledger.domain.principal import Principal
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = pytest.mark.temporal

MALLORY = Principal(user_id="mallory", tenant_id="acme", roles=frozenset({"approver"}))


async def _pending(harness: Harness) -> tuple[str, str, str]:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    return run_id, approval_id, pending.proposal_digest


def _refusals(events: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [
        (e.attempted_by, e.reason_code) for e in events if isinstance(e, ApprovalAttemptRefused)
    ]


async def _send(harness: Harness, run_id: str, decision: ApprovalDecision) -> None:
    await harness.client.get_workflow_handle(run_id).execute_update(
        AgentRunWorkflow.decide_approval, decision
    )


async def test_a_forged_approver_or_a_claimed_role_is_refused_and_recorded(
    harness: Harness,
) -> None:
    run_id, approval_id, digest = await _pending(harness)
    # A real approver's id, unsigned: anyone who reaches Temporal can send this much, so it is
    # refused before the update is accepted and recorded nowhere.
    unsigned = ApprovalDecision(
        approval_id=approval_id, approver_id="ops_lead_1", approve=True, proposal_digest=digest
    )
    with pytest.raises(WorkflowUpdateFailedError) as refusal:
        await _send(harness, run_id, unsigned)
    assert getattr(refusal.value.cause, "type", None) == "assertion_missing"
    forged = [
        # Signed by the trusted issuer, for someone the directory does not know.
        ApprovalDecision(
            approval_id=approval_id,
            approver_id="mallory",
            approve=True,
            proposal_digest=digest,
            assertion=harness.issuer.approval_assertion(
                "mallory", run_id=run_id, approval_id=approval_id, digest=digest, approve=True
            ),
        ),
        # The whole principal, roles and all, as clients used to send it.
        ApprovalDecision(
            approval_id=approval_id, approver=MALLORY, approve=True, proposal_digest=digest
        ),
        # A real approver's id with a principal object claiming it: the claim alone is refused.
        ApprovalDecision(
            approval_id=approval_id,
            approver=harness.principal("ops_lead_1"),
            approve=True,
            proposal_digest=digest,
        ),
    ]
    for decision in forged:
        with pytest.raises(WorkflowUpdateFailedError):
            await _send(harness, run_id, decision)
    assert refund_rows(harness) == 0

    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    assert _refusals(events) == [
        ("mallory", "unknown_approver"),
        ("mallory", "principal_claimed"),
        ("ops_lead_1", "principal_claimed"),
    ]
    (granted,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert granted.approver_entry == harness.principal("ops_lead_1")
    assert granted.assertion is not None and granted.assertion.subject == "ops_lead_1"
    assert refund_rows(harness) == 1


@pytest.mark.parametrize(
    ("claim", "refusal", "said"),
    [
        ({"approver": MALLORY.model_dump(mode="json")}, ("mallory", "principal_claimed"),
         b"roles and tenant come from the directory"),
        # Unsigned: refused by the update's validator, never accepted, recorded nowhere.
        ({"approver_id": "ops_lead_1"}, None,
         b"assertion_missing: this run takes only what a trusted issuer signed"),
        ({"approver_id": "ops_lead_1", "assertion": "eyJhbGciOiJub25lIn0.e30."},
         None, b"assertion_malformed: alg must be EdDSA"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # about identity, not storage
async def test_the_bare_temporal_binary_cannot_approve_as_anyone(
    harness: Harness, claim: dict[str, object], refusal: tuple[str, str] | None, said: bytes
) -> None:
    run_id, approval_id, digest = await _pending(harness)
    forged = {"approval_id": approval_id, "approve": True, "proposal_digest": digest, **claim}
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        "workflow",
        "update",
        "execute",
        "--address",
        harness.settings.temporal_address or "",
        "--workflow-id",
        run_id,
        "--name",
        "decide_approval",
        "--input",
        json.dumps(forged),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode != 0, out
    assert said in out
    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    assert _refusals(events) == ([refusal] if refusal else [])
    assert refund_rows(harness) == 1


async def test_ids_are_compared_in_one_spelling(harness: Harness) -> None:
    run_id, approval_id, _ = await _pending(harness)
    with pytest.raises(Exception, match="cannot approve"):
        await harness.decide(run_id, approval_id, "USR_73 ")  # the requester, shouted
    await harness.decide(run_id, approval_id, "Ops_Lead_1")
    events = await harness.finish(run_id)
    assert _refusals(events) == [("usr_73", "requester_cannot_approve")]
    (granted,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert granted.approver == "ops_lead_1"


async def test_a_role_revoked_while_the_approval_waits_is_honoured(harness: Harness) -> None:
    run_id, approval_id, _ = await _pending(harness)
    lead = harness.principal("ops_lead_1")
    harness.runtime.ledger.put_principal(lead.model_copy(update={"roles": frozenset()}))
    with pytest.raises(Exception, match="lacks the approver role"):
        await harness.decide(run_id, approval_id, "ops_lead_1")
    harness.runtime.ledger.put_principal(lead)
    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    assert _refusals(events) == [("ops_lead_1", "missing_role")]
    assert refund_rows(harness) == 1


def _stranger(p: Principal) -> Principal:
    return MALLORY.model_copy(update={"roles": frozenset()})


def _self_promoted(p: Principal) -> Principal:
    return p.model_copy(update={"roles": frozenset({"approver"})})


def _other_tenant(p: Principal) -> Principal:
    return p.model_copy(update={"tenant_id": "globex"})


def _self_scoped(p: Principal) -> Principal:
    return p.model_copy(update={"scopes": p.scopes | {"refunds:write"}})


@pytest.mark.parametrize(
    ("claim", "problem"),
    [
        (_stranger, "not in the directory"),
        (_self_promoted, "does not hold role(s) approver"),
        (_other_tenant, "does not belong to tenant"),
        (_self_scoped, "does not hold scope(s) refunds:write"),
    ],
)
async def test_a_run_for_a_requester_the_directory_does_not_vouch_for_is_refused(
    harness: Harness, claim: Callable[[Principal], Principal], problem: str
) -> None:
    work_order = get_pack("support").make_work_order(REQUEST, claim(harness.principal("usr_73")))
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    events = await harness.finish(handle.id)
    assert [e.kind for e in events] == ["run_started", "run_failed"]
    failed = events[-1]
    assert isinstance(failed, RunFailed) and failed.reason_code == "preparation_failed"
    assert "RequesterNotInDirectory" in failed.message and problem in failed.message


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # about identity, not storage
async def test_five_thousand_refused_attempts_do_not_starve_the_real_approver(
    harness: Harness,
) -> None:
    run_id, approval_id, digest = await _pending(harness)
    handle = harness.client.get_workflow_handle(run_id)

    async def attempt(i: int) -> str:
        # Signed by the run's own issuer, for people the directory does not know: refusals worth
        # recording, up to the cap (unsigned ones are recorded never: test_unsigned_updates).
        signed = harness.issuer.approval_assertion(
            f"mallory{i}", run_id=run_id, approval_id=approval_id, digest=digest, approve=True
        )
        decision = ApprovalDecision(
            approval_id=approval_id,
            approver_id=f"mallory{i}",
            approve=True,
            proposal_digest=digest,
            assertion=signed,
        )
        try:
            await handle.execute_update(AgentRunWorkflow.decide_approval, decision)
        except WorkflowUpdateFailedError:
            return "refused"
        except RPCError as exc:  # rejected by the validator, or over the in-flight limit
            return "throttled" if "limit" in exc.message.lower() else "refused"
        return "granted"

    outcomes: list[str] = []
    for start in range(0, 5_000, 8):  # under Temporal's 10 in-flight updates per run
        outcomes += await asyncio.gather(*(attempt(i) for i in range(start, start + 8)))
    assert outcomes.count("granted") == 0
    assert outcomes.count("throttled") == 0

    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    assert len(_refusals(events)) == MAX_RECORDED_REFUSALS
    assert refund_rows(harness) == 1
