"""Who is acting: the authenticated identity every selection and authorisation runs with."""

from __future__ import annotations

from pydantic import field_serializer

from domain._model import Frozen

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
