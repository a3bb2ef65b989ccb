"""Approval notices: a pending approval announced where its approvers are, a chat channel's
incoming webhook (Slack-compatible JSON) or mail (SMTP), by the ``notify_approval`` activity.

The worker's notification file (``AGENTLEDGER_NOTIFY_FILE``, JSON) names the channels, with
their addresses and secrets, and which tenants' approvals each announces; a run's manifest
freezes the names of its tenant's channels only. A message says which tool waits for which
role in which run, until when, and links to the approvals page: nothing is approved by
following the link (the page asks for sign-in, then a signed decision), and it carries no
secret and none of the call's arguments unless the channel says ``include_arguments``.

A channel that fails raises for Temporal to retry (``notice_retry``); one that refuses the
message (a 4xx webhook answer, a mail server's 5xx) fails at once. Either way the run records
the outcome and the approval waits in the inbox as it would without notices.
"""

from __future__ import annotations

import json
import os
import smtplib
from email.message import EmailMessage
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentledger.activities.messages import NoticeInput, NoticeSent
from agentledger.activities.surface import NoticeSteps


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookChannel(_Config):
    kind: Literal["webhook"]
    url_env: str
    """The variable holding the incoming webhook's URL: such a URL is a secret."""
    timeout_seconds: float = Field(5.0, gt=0, le=60)
    include_arguments: bool = False


class EmailChannel(_Config):
    kind: Literal["email"]
    host: str
    port: int = Field(25, gt=0, lt=65536)
    sender: str
    recipients: dict[str, str] = Field(default_factory=dict)
    """Approvers' addresses by user id: mail goes to those eligible for the approval."""
    starttls: bool = False
    username_env: str | None = None
    password_env: str | None = None
    timeout_seconds: float = Field(10.0, gt=0, le=60)
    include_arguments: bool = False


Channel = Annotated[WebhookChannel | EmailChannel, Field(discriminator="kind")]


class NoticeConfig(_Config):
    base_url: str
    """Where people open the UI (``agentledger serve``): the message links to its approvals."""
    channels: dict[str, Channel]
    tenants: dict[str, tuple[str, ...]]
    """The channels each tenant's approvals are announced on (``"*"``: any other tenant's)."""

    def channels_for(self, tenant_id: str) -> tuple[str, ...]:
        return self.tenants.get(tenant_id, self.tenants.get("*", ()))


def load_notices(path: Path) -> NoticeConfig:
    """The notification file, checked: every tenant's channel is one the file defines."""
    try:
        config = NoticeConfig.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:  # a ValidationError is a ValueError
        raise ValueError(f"notification file {path}: {str(exc).splitlines()[0]}") from None
    unknown = {c for names in config.tenants.values() for c in names} - config.channels.keys()
    if unknown:
        raise ValueError(f"notification file {path}: no channel {sorted(unknown)}")
    return config


class Notices(NoticeSteps):
    """``notify_approval`` over the worker's notification configuration."""

    def __init__(self, config: NoticeConfig | None) -> None:
        self._config = config

    @activity.defn(name="notify_approval")
    def notify_approval(self, notice: NoticeInput) -> NoticeSent:
        config = self._config
        channel = config.channels.get(notice.channel) if config else None
        if config is None or channel is None:
            raise _final("unknown_channel", f"this worker has no channel {notice.channel!r}")
        text = message(notice, config.base_url, channel.include_arguments)
        if isinstance(channel, WebhookChannel):
            return _post(channel, text)
        return _mail(channel, notice, text)


def message(notice: NoticeInput, base_url: str, include_arguments: bool) -> str:
    """What approvers read: which call waits for which role, until when, and where to decide."""
    link = f"{base_url.rstrip('/')}/ui/approvals#{notice.run_id}-{notice.approval_id}"
    lines = [
        f"Approval requested: {notice.tool} in run {notice.run_id} waits for the "
        f"{notice.approver_role} role (tenant {notice.tenant_id}) until "
        f"{notice.expires_at:%Y-%m-%d %H:%M} UTC.",
        f"Decide at {link} (sign in first; opening the link approves nothing).",
    ]
    if include_arguments:
        lines.append("Arguments: " + json.dumps(notice.arguments, sort_keys=True))
    return "\n".join(lines)


def _post(channel: WebhookChannel, text: str) -> NoticeSent:
    url = os.environ.get(channel.url_env)
    if not url:
        raise _final("webhook_unset", f"{channel.url_env} holds no webhook URL on this worker")
    import httpx  # here: a worker announcing nowhere never loads an HTTP client (lean worker)

    try:
        answer = httpx.post(url, json={"text": text}, timeout=channel.timeout_seconds)
    except httpx.HTTPError as exc:  # unreachable, or no answer in time: retried
        detail = f"webhook: {type(exc).__name__}"
        raise ApplicationError(detail, type="webhook_unreachable") from None
    if answer.status_code >= 500 or answer.status_code == 429:
        raise ApplicationError(f"webhook answered {answer.status_code}", type="webhook_failed")
    if answer.status_code >= 400:
        raise _final("webhook_refused", f"webhook answered {answer.status_code}")
    return NoticeSent(channel_kind="webhook", recipients=1)


def _mail(channel: EmailChannel, notice: NoticeInput, text: str) -> NoticeSent:
    to = [channel.recipients[u] for u in notice.eligible_approvers if u in channel.recipients]
    if not to:
        raise _final("no_recipients", "no eligible approver has an address on this channel")
    mail = EmailMessage()
    mail["From"], mail["To"] = channel.sender, ", ".join(to)
    mail["Subject"] = f"Approval requested: {notice.tool} in run {notice.run_id}"
    mail.set_content(text)
    try:
        with smtplib.SMTP(channel.host, channel.port, timeout=channel.timeout_seconds) as smtp:
            if channel.starttls:
                smtp.starttls()
            if channel.username_env:
                password = os.environ.get(channel.password_env or "", "")
                smtp.login(os.environ.get(channel.username_env, ""), password)
            smtp.send_message(mail)
    except smtplib.SMTPResponseException as exc:
        if exc.smtp_code >= 500:  # refused for good (an unknown address, a policy)
            raise _final("smtp_refused", f"the mail server refused: {exc.smtp_code}") from None
        raise ApplicationError(f"mail server: {exc.smtp_code}", type="smtp_failed") from None
    except smtplib.SMTPRecipientsRefused:
        raise _final("smtp_refused", "the mail server refused every recipient") from None
    except (OSError, smtplib.SMTPException) as exc:  # unreachable, timed out: retried
        raise ApplicationError(f"mail server: {type(exc).__name__}", type="smtp_failed") from None
    return NoticeSent(channel_kind="email", recipients=len(to))


def _final(code: str, detail: str) -> ApplicationError:
    return ApplicationError(detail, type=code, non_retryable=True)


__all__ = ["NoticeConfig", "Notices", "load_notices", "message"]
