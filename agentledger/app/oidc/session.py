"""A usable token for this data directory: the cached one while it lives, else a renewed one
(a service asks again with its credentials; a person's refresh token is spent), else a refusal
that says to sign in. ``sign_in`` is the interactive half: ``agentledger login``."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from agentledger.app.oidc import flows
from agentledger.app.oidc.cache import Token, TokenCache
from agentledger.app.oidc.errors import NotSignedIn, SignInFailed
from agentledger.app.oidc.settings import ProviderSettings


async def current_token(
    provider: ProviderSettings, cache: TokenCache, http: httpx.AsyncClient
) -> Token:
    cached = cache.get(provider.cache_key)
    if cached is not None and cached.usable(time.time()):
        return cached
    if provider.is_service:
        return await sign_in(provider, cache, http, show=lambda _code: None)
    if cached is None or cached.refresh_token is None:
        raise NotSignedIn(
            f"not signed in to {provider.issuer}"
            + (" (the token expired)" if cached is not None else "")
            + ": run `agentledger login`"
        )
    endpoints = await flows.discover(http, provider.issuer)
    try:
        token = await flows.refresh(http, provider, endpoints, cached.refresh_token)
    except SignInFailed as exc:
        cache.forget(provider.cache_key)
        raise NotSignedIn(
            f"the sign-in to {provider.issuer} has ended ({exc}): run `agentledger login`"
        ) from None
    cache.put(provider.cache_key, token)
    return token


async def sign_in(
    provider: ProviderSettings,
    cache: TokenCache,
    http: httpx.AsyncClient,
    show: Callable[[flows.DeviceCode], None],
) -> Token:
    """A new token: client credentials for a service; for a person, the device flow, whose code
    ``show`` tells them, waiting until they confirm it at the provider."""
    endpoints = await flows.discover(http, provider.issuer)
    if provider.is_service:
        token = await flows.client_credentials(http, provider, endpoints)
    else:
        code = await flows.start_device_login(http, provider, endpoints)
        show(code)
        token = await flows.finish_device_login(http, provider, endpoints, code)
    cache.put(provider.cache_key, token)
    return token
