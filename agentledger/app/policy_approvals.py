"""A policy revision's approval, signed: the audience it is bound to, and its check (who
approved exactly this revision's content; ``Issuer.policy_assertion`` signs it)."""

from __future__ import annotations

from typing import Protocol

import jwt

from agentledger.app.errors import Refused
from agentledger.domain.assertions import ALGORITHM, TrustedKey


class PolicyRevision(Protocol):
    """What a policy approval is about (``activities.retrieval.PolicyDocument`` is one)."""

    @property
    def tenant_id(self) -> str: ...
    @property
    def document_id(self) -> str: ...
    @property
    def revision(self) -> str: ...
    @property
    def content_hash(self) -> str: ...


def policy_audience(tenant_id: str, document_id: str, revision: str) -> str:
    return f"policy:{tenant_id}/{document_id}@{revision}"


def verify_policy_approval(assertion: str, key: TrustedKey, document: PolicyRevision) -> str:
    """Who approved ``document``, once ``key`` is shown to have signed it for exactly its tenant,
    id, revision and content hash (else ``Refused``); an audit record, so not its expiry."""
    public = jwt.PyJWK({"kty": "OKP", "crv": "Ed25519", "x": key.x}, algorithm=ALGORITHM)
    try:
        claims = jwt.decode(
            assertion,
            public.key,
            algorithms=[ALGORITHM],
            audience=policy_audience(document.tenant_id, document.document_id, document.revision),
            issuer=key.issuer,
            options={"verify_exp": False, "require": ["sub", "digest", "iat"]},
        )
    except jwt.InvalidAudienceError:
        raise Refused("the signed approval is not about this revision") from None
    except jwt.PyJWTError as exc:
        raise Refused(f"the approval's signature does not verify ({exc})") from None
    if claims.get("digest") != document.content_hash or claims.get("decision") != "approve":
        raise Refused("the signed approval is not about this revision's content")
    return str(claims["sub"])
