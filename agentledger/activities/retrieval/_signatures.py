"""Signed approvals of policy revisions: the assertion the issuer signed when a person approved
one (``identity.Issuer.policy_assertion``), kept beside the revision it approves."""

from __future__ import annotations

from sqlalchemy import Connection, delete, select

from agentledger.activities._sql import upsert
from agentledger.activities.retrieval._tables import approval_signatures

_s = approval_signatures.c


def keep_signature(conn: Connection, key: tuple[str, str, str], assertion: str | None) -> None:
    """The revision's signed approval is ``assertion`` now (``None``: it has none, as a draft,
    a withdrawn revision or one approved without a signature)."""
    tenant_id, document_id, revision = key
    if assertion is None:
        conn.execute(
            delete(approval_signatures).where(
                _s.tenant_id == tenant_id, _s.document_id == document_id, _s.revision == revision
            )
        )
        return
    row = {
        "tenant_id": tenant_id,
        "document_id": document_id,
        "revision": revision,
        "assertion": assertion,
    }
    upsert(conn, approval_signatures, row, ("tenant_id", "document_id", "revision"))


def signature_of(conn: Connection, tenant_id: str, document_id: str, revision: str) -> str | None:
    found = conn.execute(
        select(_s.assertion).where(
            _s.tenant_id == tenant_id, _s.document_id == document_id, _s.revision == revision
        )
    ).scalar()
    return None if found is None else str(found)
