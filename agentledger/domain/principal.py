"""Who is acting: the authenticated identity every selection and authorisation runs with."""

from __future__ import annotations

import unicodedata

from pydantic import field_serializer

from agentledger.domain._model import Frozen

APPROVER_ROLE = "approver"


class Principal(Frozen):
    """An authenticated user or service, scoped to one tenant.

    ``scopes`` are permission scopes (e.g. ``orders:read``); ``roles`` name duties such as
    ``approver``. Both come from the directory, never from model output.
    """

    user_id: str
    tenant_id: str
    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    display_name: str = ""

    @field_serializer("roles", "scopes")
    def _sorted(self, values: frozenset[str]) -> list[str]:
        # Set order depends on the hash seed; digests over a principal must not.
        return sorted(values)

    def has_role(self, role: str) -> bool:
        return role in self.roles

    def scope_key(self) -> str:
        """A stable string for cache keys: two principals with different scopes never share it."""
        return "|".join(
            [
                self.tenant_id,
                self.user_id,
                ",".join(sorted(self.roles)),
                ",".join(sorted(self.scopes)),
            ]
        )


def canonical_user_id(raw: str) -> str:
    """The one spelling of a user id that identities are compared in: ``USR_73 `` is ``usr_73``.

    NFKC folds look-alike forms (full-width letters, ligatures) onto their plain letters, so two
    spellings a person cannot tell apart never name two identities.
    """
    return unicodedata.normalize("NFKC", raw).strip().casefold()


def tenant_covers(outer: str, inner: str) -> bool:
    """``inner`` is ``outer`` or one of its sub-tenants (``acme/eu`` is inside ``acme``)."""
    return inner == outer or inner.startswith(outer + "/")


def claim_problem(claimed: Principal, entry: Principal | None) -> str | None:
    """Why ``claimed`` is not a narrowing of its directory ``entry`` (None: it is).

    A work order may act as its requester with less authority than the directory gives it (a
    sub-tenant, fewer roles or scopes), never with more: who someone is and what they may do is
    the directory's to say, not the payload's.
    """
    if entry is None:
        return f"{claimed.user_id!r} is not in the directory"
    if canonical_user_id(claimed.user_id) != entry.user_id:
        return f"{claimed.user_id!r} is spelled {entry.user_id!r} in the directory"
    if not tenant_covers(entry.tenant_id, claimed.tenant_id):
        return f"{entry.user_id} does not belong to tenant {claimed.tenant_id!r}"
    if extra := sorted(claimed.roles - entry.roles):
        return f"{entry.user_id} does not hold role(s) {', '.join(extra)}"
    if extra := sorted(claimed.scopes - entry.scopes):
        return f"{entry.user_id} does not hold scope(s) {', '.join(extra)}"
    return None
