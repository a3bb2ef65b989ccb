"""Approvals as events: a call held for a person, their decision (granted, possibly with edits;
rejected; expired) and the attempts refused, kept for audit (``domain.approvals`` decides who
may; ``domain.fold`` applies them through ``_draft``)."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

from agentledger.domain.assertions import VerifiedAssertion
from agentledger.domain.decisions import ApprovalEdit
from agentledger.domain.envelope import Envelope
from agentledger.domain.principal import Principal
from agentledger.domain.state_records import ApprovalRequest


class ApprovalRequested(Envelope, ApprovalRequest):
    kind: Literal["approval_requested"] = "approval_requested"

    def request(self) -> ApprovalRequest:
        """The request this event records, as the state keeps it while pending."""
        return ApprovalRequest.model_construct(
            **{name: getattr(self, name) for name in ApprovalRequest.model_fields}
        )


class ApprovalGranted(Envelope):
    kind: Literal["approval_granted"] = "approval_granted"
    approval_id: str
    approver: str
    proposal_digest: str
    content: dict[str, JsonValue] | None = None
    """The approver's answer to the approval's elicitation (checked against its schema)."""
    approver_entry: Principal | None = None
    """The approver as the directory knew them when they decided (roles, tenant)."""
    assertion: VerifiedAssertion | None = None
    """The signed assertion that proved who decided (runs whose manifest pins approval keys)."""
    edit: ApprovalEdit | None = None
    """Set when the approver approved an edited call: proposed, approved, the difference, and
    the digest the grant is bound to (the signed assertion covers ``edit_digest``)."""


class ApprovalRejected(Envelope):
    kind: Literal["approval_rejected"] = "approval_rejected"
    approval_id: str
    approver: str
    reason: str
    approver_entry: Principal | None = None
    """The approver as the directory knew them when they decided (roles, tenant)."""
    assertion: VerifiedAssertion | None = None
    """The signed assertion that proved who decided (runs whose manifest pins approval keys)."""


class ApprovalExpired(Envelope):
    kind: Literal["approval_expired"] = "approval_expired"
    approval_id: str


class ApprovalAttemptRefused(Envelope):
    """Someone tried to decide an approval and was not allowed to; kept for audit."""

    kind: Literal["approval_attempt_refused"] = "approval_attempt_refused"
    approval_id: str
    attempted_by: str
    reason_code: str
    detail: str


class ApprovalNotified(Envelope):
    """The approval's request reached a channel its manifest names (``activities.notices``):
    a chat webhook took the message, or a mail server accepted it for ``recipients``. The
    message links to the approvals page; following it approves nothing."""

    kind: Literal["approval_notified"] = "approval_notified"
    approval_id: str
    channel: str
    channel_kind: Literal["webhook", "email"]
    recipients: int


class ApprovalNotificationFailed(Envelope):
    """A channel could not be reached after its retries (or refused the message): the
    approval still waits in the inbox, as it would without notifications."""

    kind: Literal["approval_notification_failed"] = "approval_notification_failed"
    approval_id: str
    channel: str
    reason_code: str
    detail: str
