"""Who is asking: bearer tokens verified against configured issuers, mapped to a ``Principal``.

A token is accepted only if an issuer we trust signed it with an asymmetric key from that
issuer's JWKS, for our audience, inside its ``nbf``/``exp`` window. Every issuer vouches only for
*who*: roles and tenant come from the ledger's directory, as they do for the workflow. The local
issuer (the embedded stack's own key) speaks for the whole directory; an external OIDC issuer
only for the tenants its configuration binds it to (``tenants``), and the tenant and roles its
token claims (the claims its configuration names) may narrow the directory's, never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from agentledger.api.oidc_discovery import Discovery
from agentledger.api.problems import ApiProblem, unauthenticated
from agentledger.app.config import ISSUERS_VARIABLE, bound_tenants
from agentledger.app.errors import ConfigError
from agentledger.app.identity import API_AUDIENCE, VerifiedCaller
from agentledger.domain.principal import Principal, claim_problem, tenant_covers

ALGORITHMS = ("EdDSA", "ES256", "ES384", "RS256", "RS384", "RS512", "PS256")
"""Asymmetric only: a shared-secret (HS*) token could be minted by anyone holding the secret."""
LEEWAY_SECONDS = 30


@dataclass(frozen=True)
class TrustedIssuer:
    """One issuer whose tokens the API accepts; its subject is looked up in the ledger's
    directory. ``directory``: the local issuer, which speaks for anyone there; otherwise only
    for the directory's people of ``tenants``, and its tenant and roles claims must agree."""

    issuer: str
    audience: str = API_AUDIENCE
    jwks: Mapping[str, Any] | None = None
    jwks_url: str | None = None
    tenant_claim: str = "tenant"
    roles_claim: str = "roles"
    directory: bool = False
    tenants: tuple[str, ...] = ()
    """The tenants (sub-tenants included) an external issuer may speak for: nobody else."""
    leeway_seconds: int = LEEWAY_SECONDS
    """Clock skew allowed around ``nbf``/``exp`` (``leeway_seconds`` of the issuer's entry)."""


@dataclass(frozen=True)
class Caller:
    """A verified identity: the principal acting, and the token that proved it."""

    principal: Principal
    subject: str
    issuer: str
    token_id: str | None

    def verified(self) -> VerifiedCaller:
        """Who the service signs for: the run records this caller's issuer and token id."""
        return VerifiedCaller(
            subject=self.subject, issuer=self.issuer, token_id=self.token_id or ""
        )


class _Keys:
    """An issuer's verification keys: a fixed JWKS, or fetched (and cached) from its URL, or
    from the ``jwks_uri`` of its OpenID discovery document (``oidc_discovery.Discovery``)."""

    def __init__(self, trusted: TrustedIssuer) -> None:
        try:
            self._set = jwt.PyJWKSet.from_dict(dict(trusted.jwks)) if trusted.jwks else None
        except jwt.PyJWTError as exc:  # a misconfigured issuer stops the service at start
            raise ConfigError(f"issuer {trusted.issuer!r}: its JWKS is unusable: {exc}") from None
        self._client = jwt.PyJWKClient(trusted.jwks_url) if trusted.jwks_url else None
        self._discovery = None if trusted.jwks or trusted.jwks_url else Discovery(trusted.issuer)

    def key_for(self, token: str, kid: str | None) -> jwt.PyJWK:
        if self._discovery is not None:
            return self._discovery.signing_key(token)
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token)
        assert self._set is not None
        keys = self._set.keys
        if kid is None and len(keys) == 1:  # a single-key issuer need not name its key
            return keys[0]
        for key in keys:
            if key.key_id == kid:
                return key
        raise unauthenticated(f"no key {kid!r} in the issuer's JWKS")


class Authenticator:
    def __init__(
        self,
        issuers: Sequence[TrustedIssuer],
        directory: Callable[[str], Principal | None],
    ) -> None:
        self._issuers = {t.issuer: (t, _Keys(t)) for t in issuers}
        self._directory = directory

    def verify(self, token: str) -> Caller:
        """The caller a token proves, or a 401 problem saying why it proves nothing."""
        trusted, keys, header = self._issuer_of(token)
        try:
            key = keys.key_for(token, header.get("kid"))
            claims = jwt.decode(
                token,
                key,
                algorithms=[a for a in ALGORITHMS if a == (key.algorithm_name or a)],
                audience=trusted.audience,
                issuer=trusted.issuer,
                leeway=trusted.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise unauthenticated("the token has expired", "token-expired") from None
        except jwt.InvalidAudienceError:
            raise unauthenticated(
                f"the token is not for this API (audience {trusted.audience!r} expected)",
                "wrong-audience",
            ) from None
        except jwt.PyJWKClientConnectionError as exc:
            raise ApiProblem(
                503, "issuer-unreachable", f"issuer {trusted.issuer!r}'s keys: {exc}"
            ) from None
        except (jwt.PyJWTError, ValueError) as exc:
            raise unauthenticated(f"the token is not valid: {exc}") from None
        return self._caller(trusted, claims)

    def _issuer_of(self, token: str) -> tuple[TrustedIssuer, _Keys, dict[str, Any]]:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise unauthenticated(f"not a JWT: {exc}") from None
        found = self._issuers.get(str(unverified.get("iss")))
        if found is None:
            raise unauthenticated(
                f"issuer {str(unverified.get('iss'))[:200]!r} is not trusted here",
                "issuer-not-trusted",
            )
        return found[0], found[1], header

    def _caller(self, trusted: TrustedIssuer, claims: dict[str, Any]) -> Caller:
        subject = str(claims["sub"])
        entry = self._directory(subject)
        if not trusted.directory:
            entry = _bound(trusted, subject, entry, claims)
        if entry is None:
            raise unauthenticated(f"subject {subject!r} is not in the directory")
        jti = claims.get("jti")
        return Caller(entry, subject, trusted.issuer, str(jti) if jti else None)


def _bound(
    trusted: TrustedIssuer, subject: str, entry: Principal | None, claims: dict[str, Any]
) -> Principal:
    """An external issuer speaks for a directory ``entry`` only inside its tenants (whether the
    subject is unknown or another tenant's is not told: one answer for both), and only with
    claims that narrow the directory's (its tenant, or a sub-tenant; roles it holds)."""
    if entry is None or not any(tenant_covers(t, entry.tenant_id) for t in trusted.tenants):
        raise unauthenticated(
            f"issuer {trusted.issuer!r} does not speak for {subject[:200]!r}", "issuer-not-bound"
        )
    problem = claim_problem(_claimed(trusted, entry, claims), entry)
    if problem is not None:
        raise unauthenticated(
            f"the token's claims disagree with the directory: {problem}", "claims-disagree"
        )
    return entry


def _claimed(trusted: TrustedIssuer, entry: Principal, claims: dict[str, Any]) -> Principal:
    """Who the token says ``entry`` is (a claim it does not make says nothing)."""
    tenant = claims.get(trusted.tenant_claim, entry.tenant_id)
    roles = claims.get(trusted.roles_claim, [])
    if not isinstance(tenant, str) or not tenant:
        raise unauthenticated(f"the {trusted.tenant_claim!r} claim is not a tenant id")
    if isinstance(roles, str):
        roles = roles.split()
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise unauthenticated(f"the {trusted.roles_claim!r} claim is not a list of roles")
    return Principal(user_id=entry.user_id, tenant_id=tenant, roles=frozenset(roles))


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthenticated("expected 'Authorization: Bearer <token>'", "unauthenticated")
    return token.strip()


def issuers_from(value: str | None) -> list[TrustedIssuer]:
    """``AGENTLEDGER_OIDC_ISSUERS``: a JSON list of {issuer, tenants, audience, jwks_file |
    jwks_url (neither: OpenID discovery), tenant_claim, roles_claim, leeway_seconds}, inline or
    as the path of a ``.json`` file."""
    if not value or not value.strip():
        return []
    try:
        raw = json.loads(value if value.lstrip().startswith("[") else Path(value).read_text())
        return [_issuer(entry) for entry in raw]
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{ISSUERS_VARIABLE}: {exc}") from None


def _issuer(entry: dict[str, Any]) -> TrustedIssuer:
    """Keys from ``jwks_file`` or ``jwks_url``, or (neither) the issuer's discovery document."""
    jwks_file = entry.get("jwks_file")
    if jwks_file and entry.get("jwks_url"):
        raise ValueError(f"issuer {entry.get('issuer')!r}: jwks_file or jwks_url, not both")
    leeway = entry.get("leeway_seconds", LEEWAY_SECONDS)
    if not isinstance(leeway, int) or not 0 <= leeway <= 300:
        raise ValueError(f"issuer {entry.get('issuer')!r}: leeway_seconds is 0 to 300")
    return TrustedIssuer(
        issuer=entry["issuer"],
        audience=entry.get("audience", API_AUDIENCE),
        jwks=json.loads(Path(jwks_file).read_text()) if jwks_file else None,
        jwks_url=entry.get("jwks_url"),
        tenant_claim=entry.get("tenant_claim", "tenant"),
        roles_claim=entry.get("roles_claim", "roles"),
        tenants=bound_tenants(entry),
        leeway_seconds=leeway,
    )
