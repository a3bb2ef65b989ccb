"""What the authority gate's verdicts and people's decisions add to a run: the events are
decided here, from the verdict or the decision, and the workflow only records them (as
``domain.steps`` does for model steps and receipts).

Each function takes the ``Stamp`` of the event it returns, so one is returned per call and the
workflow records it at once.
"""

from __future__ import annotations

from pydantic import JsonValue

from agentledger.domain import events as ev
from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.assertions import VerifiedAssertion
from agentledger.domain.decisions import ApprovalEdit
from agentledger.domain.envelope import Stamp
from agentledger.domain.principal import Principal
from agentledger.domain.state import ApprovalRequest
from agentledger.domain.verdicts import Allow, AuthorisedCall, Deny


def authorised(
    stamp: Stamp, operation_id: str, allow: Allow, resource_id: str | None
) -> ev.ToolCallAuthorised:
    """The allowed call, recorded as ``operation_id`` (``resource_id`` only under manifests
    that bind claims: runs frozen before record none, and replay as recorded)."""
    call = {name: getattr(allow, name) for name in AuthorisedCall.model_fields}
    return ev.ToolCallAuthorised(
        **stamp, **call, operation_id=operation_id, resource_id=resource_id
    )


def denied(
    stamp: Stamp, step: str, operation_id: str, tool: str, denial: Deny
) -> ev.DecisionRejected | ev.ToolCallDenied:
    """A denial: a decision that broke the protocol is rejected as the model's error; any
    other is a denied call."""
    if denial.protocol_error:
        return ev.DecisionRejected(
            **stamp, step=step, reason_code=denial.reason_code, detail=denial.detail, option=tool
        )
    return ev.ToolCallDenied(
        **stamp,
        operation_id=operation_id,
        tool=tool,
        reason_code=denial.reason_code,
        detail=denial.detail,
    )


def requested(stamp: Stamp, request: ApprovalRequest) -> ev.ApprovalRequested:
    """The request as recorded: the pending approval the fold keeps is exactly ``request``."""
    return ev.ApprovalRequested(**stamp, **dict(request))


def decided(
    stamp: Stamp,
    approval_id: str,
    approver: Principal,
    *,
    approve: bool,
    proposal_digest: str,
    reason: str = "",
    content: dict[str, JsonValue] | None = None,
    entry: Principal | None = None,
    proven: VerifiedAssertion | None = None,
    edit: ApprovalEdit | None = None,
) -> ev.ApprovalGranted | ev.ApprovalRejected:
    """A person's decision, checked before (``domain.approvals``): ``entry`` is the approver as
    the directory knew them (``None`` in runs recorded before the directory decided identity),
    ``proven`` the assertion that proved who decided."""
    if approve:
        return ev.ApprovalGranted(
            **stamp,
            approval_id=approval_id,
            approver=approver.user_id,
            proposal_digest=proposal_digest,
            content=content,
            approver_entry=entry,
            assertion=proven,
            edit=edit,
        )
    return ev.ApprovalRejected(
        **stamp,
        approval_id=approval_id,
        approver=approver.user_id,
        reason=reason,
        approver_entry=entry,
        assertion=proven,
    )


def refused_attempt(
    stamp: Stamp, approval_id: str, attempted_by: str, refusal: ApprovalRefusal
) -> ev.ApprovalAttemptRefused:
    """An attempt to decide that was refused, kept for audit."""
    return ev.ApprovalAttemptRefused(
        **stamp,
        approval_id=approval_id,
        attempted_by=attempted_by,
        reason_code=refusal.reason_code,
        detail=refusal.detail,
    )
