"""Where the CLI gets its tokens and where it sends them, from ``AGENTLEDGER_*`` variables.

Without ``AGENTLEDGER_API_URL`` the CLI is the embedded single-user default: it talks to
Temporal itself and signs with the data directory's local issuer (``agentledger.app.identity``).
With it, every run, approval and reply goes through that API with a token from the identity
provider ``AGENTLEDGER_OIDC_ISSUER``: a person's by the device authorization grant
(``agentledger login``), a service's by client credentials when it has a client secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentledger.app.errors import ConfigError, in_words

API_URL_VARIABLE = "AGENTLEDGER_API_URL"
ISSUER_VARIABLE = "AGENTLEDGER_OIDC_ISSUER"
DEFAULT_CLIENT_ID = "agentledger-cli"
PERSON_SCOPE = "openid offline_access"
"""A person's sign-in asks for a refresh token, so an expired access token is renewed quietly."""


@dataclass(frozen=True)
class ProviderSettings:
    issuer: str
    client_id: str = DEFAULT_CLIENT_ID
    client_secret: str | None = None
    """A service's secret: with it, tokens come by client credentials, never a person's login."""
    resource: str | None = None
    """The API as a resource indicator (RFC 8707), where the provider needs one to pick the
    tokens' audience (``AGENTLEDGER_OIDC_RESOURCE``)."""
    scope: str | None = None

    @property
    def is_service(self) -> bool:
        return self.client_secret is not None

    @property
    def cache_key(self) -> str:
        return " ".join((self.issuer, self.client_id, self.resource or ""))


def provider_settings(env: Mapping[str, str] | None = None) -> ProviderSettings | None:
    """The configured identity provider, or ``None`` (the embedded default's local issuer)."""
    env = os.environ if env is None else env
    issuer = env.get(ISSUER_VARIABLE, "").strip()
    if not issuer:
        return None
    if not issuer.startswith(("https://", "http://")):
        raise ConfigError(f"{ISSUER_VARIABLE}={issuer!r}: expected the issuer's URL")
    secret = _secret(env)
    return ProviderSettings(
        issuer=issuer,
        client_id=env.get("AGENTLEDGER_OIDC_CLIENT_ID", "").strip() or DEFAULT_CLIENT_ID,
        client_secret=secret,
        resource=env.get("AGENTLEDGER_OIDC_RESOURCE", "").strip() or None,
        scope=env.get("AGENTLEDGER_OIDC_SCOPE", "").strip() or (None if secret else PERSON_SCOPE),
    )


def api_url(env: Mapping[str, str] | None = None) -> str | None:
    """The API the CLI sends to (``None``: the embedded default, no API in between)."""
    env = os.environ if env is None else env
    url = env.get(API_URL_VARIABLE, "").strip().rstrip("/")
    if url and not url.startswith(("https://", "http://")):
        raise ConfigError(f"{API_URL_VARIABLE}={url!r}: expected the API's URL")
    return url or None


def _secret(env: Mapping[str, str]) -> str | None:
    """A service's client secret: from a file (a container secret) or the variable itself."""
    path = env.get("AGENTLEDGER_OIDC_CLIENT_SECRET_FILE", "").strip()
    if path:
        try:
            return Path(path).read_text().strip() or None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"AGENTLEDGER_OIDC_CLIENT_SECRET_FILE: {in_words(exc)}") from None
    return env.get("AGENTLEDGER_OIDC_CLIENT_SECRET", "").strip() or None
