"""Every request's caller, and who may see or touch what: tenant first, then role.

The rules are the domain's (``tenant_covers``, roles from the directory or the issuer's claims):
a caller sees only runs of their tenant (or its sub-tenants); a customer sees only their own
runs; decisions on approvals are the run's to judge (the workflow checks the approver and
records a refused attempt). Another tenant's objects answer ``404``: their existence is not
disclosed. A refusal the API makes itself is recorded in ``api_denials``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Header, Request
from temporalio.client import Client

from agentledger.activities.ledger import Ledger, RunFilter, RunRow
from agentledger.api.audit import DenialLog
from agentledger.api.auth import Authenticator, Caller, bearer_token
from agentledger.api.problems import ApiProblem, not_found, unauthenticated
from agentledger.app.identity import Issuer
from agentledger.domain.context.items import Sensitivity
from agentledger.domain.principal import tenant_covers

TOKEN_COOKIE = "agentledger_token"
STAFF_ROLES = frozenset({"approver", "support_agent", "policy_approver", "auditor"})
"""Roles whose holders work on every run of their tenant; anyone else sees their own runs."""
POLICY_APPROVER_ROLE = "policy_approver"
AUDITOR_ROLE = "auditor"
"""Reads every packet item, ``restricted`` ones included (staff read up to ``confidential``)."""


@dataclass
class ApiContext:
    """What every handler works with: the ledger, Temporal, who is trusted, where denials go,
    and the issuer that signs decisions and replies on a verified caller's behalf (a key the
    workers' runs trust)."""

    ledger: Ledger
    client: Client
    task_queue: str
    authenticator: Authenticator
    denials: DenialLog
    signer: Issuer
    erasure_register: Path | None = None
    """Where erasures are registered for restores (``app.erasure_register``; ``None``: not)."""


def context(request: Request) -> ApiContext:
    found: ApiContext = request.app.state.context
    return found


def current_caller(
    request: Request,
    authorization: Annotated[str | None, Header()] = None,
) -> Caller:
    """The verified caller: a bearer token, or the UI's HttpOnly session cookie.

    The cookie is ambient (a browser sends it by itself), so it authenticates only reads and
    the UI's own forms, which carry a CSRF token; a change through the JSON API needs the
    header, which no other site can make a browser send."""
    token = bearer_token(authorization)
    if token is None and _cookie_allowed(request):
        token = request.cookies.get(TOKEN_COOKIE)
    if not token:
        raise unauthenticated(
            "this endpoint needs 'Authorization: Bearer <token>'", "unauthenticated"
        )
    caller = context(request).authenticator.verify(token)
    request.state.caller = caller
    return caller


def _cookie_allowed(request: Request) -> bool:
    return request.method in ("GET", "HEAD") or request.url.path.startswith("/ui/")


Ctx = Annotated[ApiContext, Depends(context)]
Who = Annotated[Caller, Depends(current_caller)]


def is_staff(caller: Caller) -> bool:
    return bool(caller.principal.roles & STAFF_ROLES)


def clearance_of(caller: Caller) -> Sensitivity:
    """Which packet items a caller may read: a customer their run's ``internal`` context (their
    own data, the policies they were answered under), staff up to ``confidential``, an auditor
    everything."""
    roles = caller.principal.roles
    if AUDITOR_ROLE in roles:
        return "restricted"
    return "confidential" if roles & STAFF_ROLES else "internal"


def scope_of(caller: Caller) -> RunFilter:
    """The runs a caller may list: their tenant's, or only their own for a customer."""
    p = caller.principal
    return RunFilter(tenant_id=p.tenant_id, principal_id=None if is_staff(caller) else p.user_id)


def visible_run(ctx: ApiContext, caller: Caller, run_id: str, action: str = "read") -> RunRow:
    """The run, if the caller may see it; otherwise ``404`` (and the attempt recorded)."""
    row = ctx.ledger.get_run(run_id)
    if row is None:
        raise not_found(f"run {run_id}")
    p = caller.principal
    if not tenant_covers(p.tenant_id, row.tenant_id):
        ctx.denials.record(caller, action, run_id, "wrong_tenant", f"run is in {row.tenant_id}")
        raise not_found(f"run {run_id}")
    if p.user_id != row.principal_id and not is_staff(caller):
        detail = f"{p.user_id} may see only their own runs"
        ctx.denials.record(caller, action, run_id, "not_own_run", detail)
        raise not_found(f"run {run_id}")
    return row


def require_role(ctx: ApiContext, caller: Caller, role: str, action: str, target: str) -> None:
    """``403`` (recorded) unless the caller holds ``role``."""
    if caller.principal.has_role(role):
        return
    detail = f"{caller.principal.user_id} lacks the {role} role"
    ctx.denials.record(caller, action, target, "missing_role", detail)
    raise ApiProblem(403, "forbidden", detail, reason_code="missing_role")


def require_tenant(ctx: ApiContext, caller: Caller, tenant_id: str, action: str) -> None:
    if tenant_covers(caller.principal.tenant_id, tenant_id):
        return
    detail = f"{caller.principal.user_id} cannot act for tenant {tenant_id}"
    ctx.denials.record(caller, action, tenant_id, "wrong_tenant", detail)
    raise ApiProblem(403, "forbidden", detail, reason_code="wrong_tenant")
