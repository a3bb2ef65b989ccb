"""Decisions reaching a run's ``decide_approval`` update, judged as the workflow judges them
(``workflows._approvals.ApprovalDesk.decide``) on the World's clock: the validator, the signed
assertion (``workflows._assertions.check_assertion``, the run's spent token ids), the directory,
the policy (``domain.approvals``) and the eligible approvers, then recorded in a workflow task
that may crash (``bench.protocol_world``)."""

from __future__ import annotations

from typing import Any

import jwt

from agentledger.app.identity import Issuer
from agentledger.domain import events as ev
from agentledger.domain.approvals import (
    MAX_RECORDED_REFUSALS,
    ApprovalRefusal,
    check_approval_decision,
    eligibility_refusal,
)
from agentledger.domain.assertions import ALGORITHM, Expected, approval_audience
from agentledger.domain.principal import Principal
from agentledger.workflows._assertions import check_assertion
from bench.protocol_checks import Sent
from bench.protocol_prefix import ASSERTION_SECONDS, DIRECTORY, FORGER, ISSUER, MANIFEST
from bench.protocol_world import Run, World

Judged = ApprovalRefusal | tuple[Principal, Any]


def sign(world: World, signer: Issuer, subject: str, run_id: str, approval_id: str, *,
         digest: str, approve: bool, ago: int = 0) -> str:  # fmt: skip
    """An assertion signed ``ago`` seconds before the World's now (negative: ahead)."""
    world.tokens += 1
    iat = int(world.now.timestamp()) - ago
    claims = {
        "iss": signer.name, "sub": subject, "aud": approval_audience(run_id, approval_id),
        "digest": digest, "decision": "approve" if approve else "reject",
        "iat": iat, "nbf": iat, "exp": iat + ASSERTION_SECONDS, "jti": f"jti-{world.tokens}",
    }  # fmt: skip
    return jwt.encode(claims, signer.key, algorithm=ALGORITHM, headers={"kid": signer.kid})


def validate(run: Run, approval_id: str) -> str | None:
    """The update's validator: an unknown approval, or an ended run, never reaches history."""
    s = run.state
    if approval_id not in s.pending_approvals and approval_id not in s.approvals:
        return "unknown_approval"
    return None if s.status == "running" else "run_ended"


def judge(world: World, run: Run, token: str, claimed: str, approval_id: str, digest: str,
          approve: bool) -> ApprovalRefusal | tuple[Principal, Any]:  # fmt: skip
    """As the update's handler judges: the signature and claims, the directory, the policy."""
    s = run.state
    expected = Expected(
        audience=approval_audience(run.run_id, approval_id), digest=digest,
        decision="approve" if approve else "reject", what=f"approval {approval_id}",
    )  # fmt: skip
    proven = check_assertion(token, MANIFEST.trusted_keys, expected, claimed_id=claimed,
                             now=world.now, spent=s.spent_assertions)  # fmt: skip
    if isinstance(proven, ApprovalRefusal):
        return proven
    entry = DIRECTORY.get(proven.subject)
    if entry is None:
        return ApprovalRefusal(reason_code="unknown_approver", detail=proven.subject)
    refusal = check_approval_decision(
        s, approval_id, entry, digest, world.now, approve=approve
    ) or eligibility_refusal(s, approval_id, entry.user_id)
    return refusal or (entry, proven)


def record_decision(world: World, run: Run, judged: ApprovalRefusal | tuple[Principal, Any],
                    claimed: str, approval_id: str, digest: str, approve: bool,
                    crash_at: int | None) -> str:  # fmt: skip
    with world.task(run, crash_at) as t:
        if isinstance(judged, ApprovalRefusal):
            refused = sum(isinstance(e, ev.ApprovalAttemptRefused)
                          and e.approval_id == approval_id for e in run.execution())  # fmt: skip
            if refused < MAX_RECORDED_REFUSALS:
                t.record(ev.ApprovalAttemptRefused, approval_id=approval_id,
                         attempted_by=claimed, reason_code=judged.reason_code,
                         detail=judged.detail)  # fmt: skip
            return judged.reason_code
        entry, proven = judged
        common = {"approval_id": approval_id, "approver": entry.user_id,
                  "approver_entry": entry, "assertion": proven}  # fmt: skip
        if approve:
            t.record(ev.ApprovalGranted, proposal_digest=digest, **common)
            return "granted"
        t.record(ev.ApprovalRejected, reason="not this time", **common)
        return "rejected"
    raise AssertionError("unreachable")  # pragma: no cover


def forged(world: World, run: Run, kind: str, asked: tuple[str, str]) -> Sent:
    """A decision for the approval ``asked`` (its id and digest) no approver made: unsigned,
    signed with a key the run did not pin, for a stale proposal, for another run's approval,
    by someone other than it claims, or tampered with after signing."""
    approval_id, digest = asked
    signer, subject, sent_digest = ISSUER, "ops_lead_1", digest
    audience_run, audience_apr = run.run_id, approval_id
    if kind == "unpinned_key":
        signer = FORGER
    elif kind == "stale_digest":
        digest = sent_digest = "0" * 64
    elif kind == "other_audience":
        audience_run, audience_apr = "run_elsewhere", "apr_1"
    elif kind == "claims_another":
        subject = "agent_2"
    token = sign(world, signer, subject, audience_run, audience_apr, digest=digest, approve=True)
    if kind == "unsigned":
        token = ""
    elif kind == "tampered":
        token = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    return Sent(run.run_id, token, "ops_lead_1", approval_id, sent_digest, True)
