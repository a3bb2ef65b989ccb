"""Public keys as JWKS documents: what a worker is configured to trust
(``AGENTLEDGER_TRUSTED_KEYS``) and what ``agentledger serve`` publishes of its own issuer."""

from __future__ import annotations

from typing import Any

from agentledger.app.errors import ConfigError
from agentledger.domain.assertions import ALGORITHM, TrustedKey


def jwks(keys: list[TrustedKey]) -> dict[str, Any]:
    """Public keys as a JWKS; each key also names its issuer (``iss``, a private member)."""
    return {
        "keys": [
            {
                "kty": "OKP",
                "crv": "Ed25519",
                "alg": ALGORITHM,
                "use": "sig",
                "kid": k.kid,
                "x": k.x,
                "iss": k.issuer,
            }
            for k in keys
        ]
    }


def keys_from_jwks(document: Any, source: str) -> tuple[TrustedKey, ...]:
    """The Ed25519 keys of a JWKS document (each with its ``iss``, or the document's)."""
    try:
        default_issuer = document.get("issuer")
        keys = tuple(
            TrustedKey(kid=k["kid"], issuer=k.get("iss") or default_issuer, x=k["x"])
            for k in document["keys"]
            if k.get("kty") == "OKP" and k.get("crv") == "Ed25519"
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"{source}: not a JWKS of Ed25519 keys with kid, x and iss ({exc!r})"
        ) from None
    if not keys:
        raise ConfigError(f"{source}: no Ed25519 key to trust")
    return keys
