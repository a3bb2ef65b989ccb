"""Verified identities: the issuer that signs approval assertions and API tokens.

A run trusts the keys its manifest pinned when it started (``domain.assertions``); a worker pins
the keys it is configured to trust (``AGENTLEDGER_TRUSTED_KEYS``, a JWKS file of public keys),
or, on the embedded stack, the local issuer's own. The local issuer is an Ed25519 key kept in the
data directory (``identity/issuer.pem``, readable by its owner only): whoever can read it can
sign decisions, exactly as whoever can read the embedded ledger can rewrite it. In production the
private key lives only with ``agentledger serve`` (``AGENTLEDGER_ISSUER_KEY``), which signs a
decision after verifying the caller's own token; nobody else can approve, whatever they send
to Temporal.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError, in_words
from agentledger.app.jwks import jwks, keys_from_jwks
from agentledger.app.policy_approvals import policy_audience
from agentledger.app.policy_approvals import verify_policy_approval as verify_policy_approval
from agentledger.app.secret_files import write_once
from agentledger.domain.assertions import (
    ALGORITHM,
    TrustedKey,
    approval_audience,
    cancel_audience,
    reply_audience,
    reply_digest,
    start_audience,
    steer_audience,
)
from agentledger.domain.forks import fork_audience
from agentledger.domain.workorder import WorkOrder, work_order_digest

API_AUDIENCE = "agentledger-api"
"""The audience of tokens that authenticate a caller to ``agentledger serve``."""
LOCAL_ISSUER = "agentledger-local"
ASSERTION_TTL = timedelta(minutes=5)
TOKEN_TTL = timedelta(minutes=60)
KEYS_VARIABLE = "AGENTLEDGER_TRUSTED_KEYS"


@dataclass(frozen=True)
class VerifiedCaller:
    """A caller whose own token a service verified before signing on their behalf."""

    subject: str
    issuer: str
    token_id: str


@dataclass(frozen=True)
class Issuer:
    """An Ed25519 signing key and the name it signs as."""

    key: Ed25519PrivateKey
    name: str = LOCAL_ISSUER

    @classmethod
    def local(cls, data_dir: Path, name: str = LOCAL_ISSUER) -> Issuer:
        """The data directory's issuer, its key created (owner-only) on first use."""
        return cls.from_file(data_dir / "identity" / "issuer.pem", name, create=True)

    @classmethod
    def from_file(cls, path: Path, name: str = LOCAL_ISSUER, *, create: bool = False) -> Issuer:
        if create and not path.exists():
            _write_new_key(path)
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the issuer key {path}: {exc}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ConfigError(f"{path} is not an Ed25519 private key")
        return cls(key, name)

    @property
    def public_x(self) -> str:
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return _b64url(raw)

    @property
    def kid(self) -> str:
        """The RFC 7638 thumbprint of the public key: the same key always has the same id."""
        members = json.dumps(
            {"crv": "Ed25519", "kty": "OKP", "x": self.public_x}, separators=(",", ":")
        )
        return _b64url(hashlib.sha256(members.encode()).digest())[:22]

    def trusted_key(self) -> TrustedKey:
        return TrustedKey(kid=self.kid, issuer=self.name, x=self.public_x)

    def public_jwks(self) -> dict[str, Any]:
        return jwks([self.trusted_key()])

    def token(
        self, subject: str, *, audience: str = API_AUDIENCE, ttl: timedelta = TOKEN_TTL
    ) -> str:
        """A bearer token for ``subject`` (who they are is the directory's to say)."""
        return self._sign({"sub": subject, "aud": audience}, ttl)

    def approval_assertion(
        self,
        subject: str,
        *,
        run_id: str,
        approval_id: str,
        digest: str,
        approve: bool,
        on_behalf_of: VerifiedCaller | None = None,
        ttl: timedelta = ASSERTION_TTL,
    ) -> str:
        """``subject`` decides ``approval_id`` of ``run_id`` (the proposal ``digest``), now."""
        claims: dict[str, Any] = {
            "sub": subject,
            "aud": approval_audience(run_id, approval_id),
            "digest": digest,
            "decision": "approve" if approve else "reject",
        }
        return self._sign(_on_behalf(claims, on_behalf_of), ttl)

    def start_assertion(
        self,
        work_order: WorkOrder,
        *,
        run_id: str,
        on_behalf_of: VerifiedCaller | None = None,
    ) -> str:
        """The work order's requester asks for exactly ``work_order`` to run as ``run_id``."""
        claims: dict[str, Any] = {
            "sub": work_order.principal.user_id,
            "aud": start_audience(run_id),
            "digest": work_order_digest(work_order),
            "decision": "start",
        }
        return self._sign(_on_behalf(claims, on_behalf_of), ASSERTION_TTL)

    def reply_assertion(
        self,
        subject: str,
        *,
        run_id: str,
        text: str,
        reply_to: int | None = None,
        on_behalf_of: VerifiedCaller | None = None,
        ttl: timedelta = ASSERTION_TTL,
    ) -> str:
        """``subject`` sent exactly ``text`` to ``run_id``, now, in answer to the message
        ``reply_to`` (the seq of the ``reply_awaited`` event the run waits on)."""
        claims: dict[str, Any] = {
            "sub": subject,
            "aud": reply_audience(run_id),
            "digest": reply_digest(text),
            "decision": "reply",
        }
        if reply_to is not None:
            claims["reply_to"] = reply_to
        return self._sign(_on_behalf(claims, on_behalf_of), ttl)

    def operator_assertion(
        self,
        subject: str,
        action: Literal["cancel", "steer"],
        *,
        run_id: str,
        text: str,
        on_behalf_of: VerifiedCaller | None = None,
    ) -> str:
        """``subject`` cancels ``run_id`` for the reason ``text``, or tells it ``text``, now."""
        audience = cancel_audience(run_id) if action == "cancel" else steer_audience(run_id)
        claims = {"sub": subject, "aud": audience, "decision": action, "digest": reply_digest(text)}
        return self._sign(_on_behalf(claims, on_behalf_of), ASSERTION_TTL)

    def fork_assertion(
        self,
        subject: str,
        *,
        run_id: str,
        digest: str,
        on_behalf_of: VerifiedCaller | None = None,
    ) -> str:
        """``subject`` starts ``run_id`` as the fork whose work order and origin ``digest``
        binds (``domain.forks.fork_digest``), now."""
        claims = {
            "sub": subject,
            "aud": fork_audience(run_id),
            "decision": "fork",
            "digest": digest,
        }
        return self._sign(_on_behalf(claims, on_behalf_of), ASSERTION_TTL)

    def policy_assertion(
        self,
        subject: str,
        *,
        tenant_id: str,
        document_id: str,
        revision: str,
        content_hash: str,
        on_behalf_of: VerifiedCaller | None = None,
    ) -> str:
        """``subject`` approves exactly this revision's content (its ``content_hash``), now."""
        claims = {
            "sub": subject,
            "aud": policy_audience(tenant_id, document_id, revision),
            "digest": content_hash,
            "decision": "approve",
        }
        return self._sign(_on_behalf(claims, on_behalf_of), ASSERTION_TTL)

    def _sign(self, claims: dict[str, Any], ttl: timedelta) -> str:
        now = int(datetime.now(UTC).timestamp())
        payload = {
            "iss": self.name,
            "iat": now,
            "nbf": now,
            "exp": now + int(ttl.total_seconds()),
            "jti": uuid.uuid4().hex,
            **claims,
        }
        return jwt.encode(payload, self.key, algorithm=ALGORITHM, headers={"kid": self.kid})


def _on_behalf(claims: dict[str, Any], caller: VerifiedCaller | None) -> dict[str, Any]:
    if caller is None:
        return claims
    return {**claims, "obo_iss": caller.issuer, "obo_jti": caller.token_id}


def issuer_for(settings: Settings) -> Issuer:
    """The issuer this process signs with: ``AGENTLEDGER_ISSUER_KEY`` (never created), else the
    data directory's local issuer."""
    if settings.issuer_key is not None:
        return Issuer.from_file(settings.issuer_key, settings.issuer_name)
    return Issuer.local(settings.data_dir, settings.issuer_name)


def trusted_keys(settings: Settings) -> tuple[TrustedKey, ...]:
    """The keys a worker pins into new manifests: the configured JWKS, else its own issuer's."""
    configured = settings.trusted_keys_file
    if configured is None:
        return (issuer_for(settings).trusted_key(),)
    try:
        document = json.loads(configured.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{KEYS_VARIABLE}={configured}: {in_words(exc)}") from None
    return keys_from_jwks(document, f"{KEYS_VARIABLE}={configured}")


def _write_new_key(path: Path) -> None:
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    write_once(path, pem)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
