"""Tokens from an OpenID provider: the device authorization grant (RFC 8628) for people, client
credentials (RFC 6749 §4.4) for services, refresh tokens for renewal.

Endpoints come from the provider's discovery document, whose ``issuer`` must be exactly the
configured one. Two form posts and a poll need no OAuth framework: httpx does them, and every
failure is one of ``oidc.errors``. The token is only carried here; the API verifies it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from agentledger.app.oidc.cache import Token
from agentledger.app.oidc.errors import (
    DeviceCodeExpired,
    IssuerUnreachable,
    SignInDenied,
    SignInFailed,
)
from agentledger.app.oidc.settings import ProviderSettings

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_INTERVAL_SECONDS = 5
TIMEOUT_SECONDS = 15.0


@dataclass(frozen=True)
class Endpoints:
    token: str
    device_authorization: str | None


@dataclass(frozen=True)
class DeviceCode:
    """What the person is shown: where to go and the code to confirm there."""

    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: int
    device_code: str
    interval: int


async def discover(http: httpx.AsyncClient, issuer: str) -> Endpoints:
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    document = await _get_json(http, url, issuer)
    if document.get("issuer") != issuer:
        raise SignInFailed(f"{url} describes another issuer, not {issuer!r}", "issuer_mismatch")
    token = document.get("token_endpoint")
    if not isinstance(token, str):
        raise SignInFailed(f"{url} names no token_endpoint", "no_token_endpoint")
    device = document.get("device_authorization_endpoint")
    return Endpoints(token=token, device_authorization=device if isinstance(device, str) else None)


async def client_credentials(
    http: httpx.AsyncClient, provider: ProviderSettings, endpoints: Endpoints
) -> Token:
    """A service's own token (its ``sub`` is its client id, as the directory must list it)."""
    assert provider.client_secret is not None
    form = _with_target(provider, {"grant_type": "client_credentials"})
    auth = httpx.BasicAuth(provider.client_id, provider.client_secret)
    status, body = await _post(http, endpoints.token, form, provider.issuer, auth=auth)
    return _token(status, body)


async def refresh(
    http: httpx.AsyncClient, provider: ProviderSettings, endpoints: Endpoints, refresh_token: str
) -> Token:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    status, body = await _post(http, endpoints.token, _client(provider, form), provider.issuer)
    return _token(status, body, refresh_token)


async def start_device_login(
    http: httpx.AsyncClient, provider: ProviderSettings, endpoints: Endpoints
) -> DeviceCode:
    if endpoints.device_authorization is None:
        raise SignInFailed(
            f"{provider.issuer} offers no device authorization endpoint", "no_device_flow"
        )
    form = _client(provider, _with_target(provider, {}))
    status, body = await _post(http, endpoints.device_authorization, form, provider.issuer)
    if status != 200:
        raise _refusal(body)
    try:
        return DeviceCode(
            user_code=str(body["user_code"]),
            verification_uri=str(body["verification_uri"]),
            verification_uri_complete=body.get("verification_uri_complete"),
            expires_in=int(body["expires_in"]),
            device_code=str(body["device_code"]),
            interval=int(body.get("interval", DEFAULT_INTERVAL_SECONDS)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SignInFailed(f"the device authorization answer lacks {exc}", "bad_answer") from None


async def finish_device_login(
    http: httpx.AsyncClient,
    provider: ProviderSettings,
    endpoints: Endpoints,
    code: DeviceCode,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Token:
    """Poll until the person has confirmed (a token), refused, or let the code expire."""
    form = _client(provider, {"grant_type": DEVICE_GRANT, "device_code": code.device_code})
    interval = code.interval
    deadline = time.monotonic() + code.expires_in
    while True:
        await sleep(interval)
        status, body = await _post(http, endpoints.token, form, provider.issuer)
        error = body.get("error") if status != 200 else None
        if error == "authorization_pending" and time.monotonic() < deadline:
            continue
        if error == "slow_down":
            interval += 5  # RFC 8628 §3.5: every slow_down adds five seconds
            continue
        if error == "authorization_pending":  # past the code's life by our own clock
            raise _refusal({"error": "expired_token"})
        return _token(status, body)


def _token(status: int, body: dict[str, Any], refresh_token: str | None = None) -> Token:
    if status != 200:
        raise _refusal(body)
    try:
        access = str(body["access_token"])
        lifetime = int(body.get("expires_in", 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise SignInFailed(f"the token answer lacks {exc}", "bad_answer") from None
    try:
        claims = jwt.decode(access, options={"verify_signature": False})
        subject = str(claims.get("sub", "?"))
        expires_at = float(claims.get("exp", time.time() + lifetime))
    except jwt.PyJWTError:  # an opaque token: only the API can say whose it is
        subject, expires_at = "?", time.time() + lifetime
    return Token(access, expires_at, subject, body.get("refresh_token") or refresh_token)


def _refusal(body: dict[str, Any]) -> SignInFailed:
    error = str(body.get("error", "unknown_error"))
    said = str(body.get("error_description", ""))[:300]
    if error == "expired_token":
        return DeviceCodeExpired(
            "the device code expired before the sign-in was completed: run `agentledger login` "
            "again and confirm the code sooner",
            error,
        )
    if error == "access_denied":
        return SignInDenied(f"the sign-in was refused at the identity provider ({said})", error)
    return SignInFailed(f"the identity provider refused: {error} ({said})", error)


def _client(provider: ProviderSettings, form: dict[str, str]) -> dict[str, str]:
    """A public client (a person's CLI) names itself in the form."""
    return {**form, "client_id": provider.client_id}


def _with_target(provider: ProviderSettings, form: dict[str, str]) -> dict[str, str]:
    extra = {"scope": provider.scope, "resource": provider.resource}
    return {**form, **{k: v for k, v in extra.items() if v}}


async def _get_json(http: httpx.AsyncClient, url: str, issuer: str) -> dict[str, Any]:
    try:
        response = await http.get(url, timeout=TIMEOUT_SECONDS)
        response.raise_for_status()
        found = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise _unreachable(issuer, exc) from None
    if not isinstance(found, dict):
        raise IssuerUnreachable(f"identity provider {issuer}: {url} is not a JSON object")
    return found


async def _post(
    http: httpx.AsyncClient,
    url: str,
    form: dict[str, str],
    issuer: str,
    auth: httpx.Auth | None = None,
) -> tuple[int, dict[str, Any]]:
    try:
        response = await http.post(
            url, data=form, auth=auth or httpx.USE_CLIENT_DEFAULT, timeout=TIMEOUT_SECONDS
        )
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise _unreachable(issuer, exc) from None
    return response.status_code, body if isinstance(body, dict) else {}


def _unreachable(issuer: str, exc: Exception) -> IssuerUnreachable:
    return IssuerUnreachable(
        f"identity provider {issuer} did not answer ({type(exc).__name__}: {exc}); check "
        "AGENTLEDGER_OIDC_ISSUER and that the provider is up"
    )
