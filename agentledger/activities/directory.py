"""The directory as the run sees it: who may start a run, who may decide its approvals.

Identity is the directory's to say, never a payload's. A run's requester must be a narrowing of
their directory entry (checked in ``prepare_run``); an approval lists the directory's approvers
when it is requested, and an approver's roles and tenant are read again when they decide, so a
role revoked in between is honoured; so is a signing key revoked in between (the worker's
``AGENTLEDGER_REVOKED_KEYS``). An external issuer a decision or reply was signed on behalf of
speaks only for the tenants the worker binds it to (``tenants`` in ``AGENTLEDGER_OIDC_ISSUERS``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentledger.activities.ledger import Ledger
from agentledger.activities.messages import (
    DirectoryEntry,
    EligibleApproversInput,
    LookUpPrincipalInput,
)
from agentledger.activities.surface import DirectorySteps
from agentledger.domain.principal import Principal, canonical_user_id, claim_problem

MAX_LISTED_APPROVERS = 500
"""An approval request lists at most this many approvers (it rides in history); a tenant with
more should give the duty to a narrower role."""


def check_requester(ledger: Ledger, claimed: Principal) -> None:
    """Refuse, for good, a run whose requester is not (a narrowing of) a directory entry."""
    problem = claim_problem(claimed, ledger.get_principal(claimed.user_id))
    if problem is not None:
        raise ApplicationError(
            f"requester refused: {problem}", type="RequesterNotInDirectory", non_retryable=True
        )


class DirectoryActivities(DirectorySteps):
    def __init__(
        self,
        ledger: Ledger,
        revoked_keys: frozenset[str] = frozenset(),
        issuer_tenants: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self._ledger = ledger
        self._revoked_keys = revoked_keys
        self._issuer_tenants = dict(issuer_tenants or {})

    def all(self) -> list[Callable[..., object]]:
        return [self.eligible_approvers, self.look_up_principal]

    @activity.defn(name="eligible_approvers")
    def eligible_approvers(self, params: EligibleApproversInput) -> list[str]:
        requester = canonical_user_id(params.requested_by)
        found = [
            p.user_id
            for p in self._ledger.principals_over(params.tenant_id)
            if p.has_role(params.role) and p.user_id != requester
        ]
        return found[:MAX_LISTED_APPROVERS]

    @activity.defn(name="look_up_principal")
    def look_up_principal(self, params: LookUpPrincipalInput) -> DirectoryEntry:
        return DirectoryEntry(
            principal=self._ledger.get_principal(params.user_id),
            key_revoked=params.key_id in self._revoked_keys,
            issuer_tenants=(
                None if params.issuer is None else self._issuer_tenants.get(params.issuer, ())
            ),
        )
