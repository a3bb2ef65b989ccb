"""The directory, asked from the workflow: who someone is when they decide or speak, and whether
the key and the issuer behind their assertion may still speak for them (``activities.directory``
answers; the workflow judges).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import DirectoryEntry, LookUpPrincipalInput
    from agentledger.activities.surface import DirectorySteps
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.assertions import VerifiedAssertion, issuer_refusal, refused

from agentledger.workflows._core import RETRY

DIRECTORY_TIMEOUT = timedelta(seconds=30)


async def look_up_principal(
    user_id: str, proven: VerifiedAssertion | None, foreign: str | None
) -> DirectoryEntry:
    """The directory's entry for ``user_id``, and what the worker says of the key that signed
    for them and of the ``foreign`` issuer that spoke for them (if one did)."""
    return await workflow.execute_activity_method(
        DirectorySteps.look_up_principal,
        LookUpPrincipalInput(
            user_id=user_id, key_id=proven.key_id if proven is not None else None, issuer=foreign
        ),
        start_to_close_timeout=DIRECTORY_TIMEOUT,
        retry_policy=RETRY,
    )


def directory_refusal(
    found: DirectoryEntry, user_id: str, foreign: str | None, unknown: str = "unknown_approver"
) -> ApprovalRefusal | None:
    """Why the directory says ``user_id`` cannot decide (or speak) with this assertion."""
    if found.key_revoked:
        return refused("key_revoked", "the key that signed this assertion was revoked")
    if found.principal is None:
        return ApprovalRefusal(reason_code=unknown, detail=f"{user_id!r} is not in the directory")
    # Recorded lookups made before issuers were bound say nothing of one (``None``).
    if foreign is not None and found.issuer_tenants is not None:
        return issuer_refusal(foreign, found.principal, found.issuer_tenants)
    return None
