"""An OpenID provider's signing keys, found as its discovery document says (OpenID Connect
Discovery 1.0): ``{issuer}/.well-known/openid-configuration`` names ``jwks_uri``, whose keys
PyJWT's ``PyJWKClient`` fetches, caches and refetches once when a token names a new ``kid``.

The document is read at the first token, not at start: the API starts while the provider is
down, and each token says so (``issuer-unreachable``, 503) until it answers. A document whose
``issuer`` is not exactly the configured one is refused, as the specification requires: a
provider cannot have its keys trusted under another's name.
"""

from __future__ import annotations

import threading

import httpx
import jwt

DISCOVERY_PATH = "/.well-known/openid-configuration"
TIMEOUT_SECONDS = 10.0


class Discovery:
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self._client: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def signing_key(self, token: str) -> jwt.PyJWK:
        """The key that signed ``token`` (``PyJWKClientConnectionError``: the provider did not
        answer; ``PyJWKClientError``: it has no such key)."""
        return self._keys().get_signing_key_from_jwt(token)

    def _keys(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._client is None:
                self._client = jwt.PyJWKClient(self._jwks_uri(), timeout=int(TIMEOUT_SECONDS))
            return self._client

    def _jwks_uri(self) -> str:
        url = self.issuer.rstrip("/") + DISCOVERY_PATH
        try:
            response = httpx.get(url, timeout=TIMEOUT_SECONDS)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise jwt.PyJWKClientConnectionError(f"discovery at {url} failed: {exc}") from None
        if not isinstance(document, dict) or document.get("issuer") != self.issuer:
            raise jwt.PyJWKClientError(f"{url} describes another issuer, not {self.issuer!r}")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri:
            raise jwt.PyJWKClientError(f"{url} names no jwks_uri")
        return jwks_uri
