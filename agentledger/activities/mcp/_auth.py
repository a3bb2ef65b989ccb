"""Bearer tokens for MCP servers over HTTP: read when a session opens, checked, sent to one origin.

The value comes from the variable the contract names and lives only in this worker's memory: not
in a contract, a manifest, an event or an error message. A JWT is checked before it is sent (its
``aud`` must cover the server, its ``exp`` must be in the future; the signature is the server's
to verify). The server's 401/403 becomes ``McpAuthRejected``, a final error: another attempt with
the same token cannot succeed. The SDK's transport never follows a redirect off the server's
origin, so the header cannot be carried to another host.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Generator
from datetime import UTC, datetime

import httpx2
import orjson

from agentledger.activities.mcp._errors import McpAuthRejected, McpContractError
from agentledger.activities.redaction import hold
from agentledger.domain.mcp import BearerToken, resource_covers

_REFUSED = (401, 403)


class BoundBearer(httpx2.Auth):
    """Adds the token to each request and remembers a refusal, which the session reports."""

    def __init__(
        self, server: str, spec: BearerToken, audience: str, now: datetime | None = None
    ) -> None:
        self._server = server
        self._spec = spec
        self._token = read_token(server, spec, audience, now or datetime.now(UTC))
        self.refused_with: int | None = None

    def auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        response = yield request
        if response.status_code in _REFUSED:
            self.refused_with = response.status_code

    def refusal(self) -> McpAuthRejected | None:
        if self.refused_with is None:
            return None
        return McpAuthRejected(
            f"MCP server {self._server!r} refused the token from ${self._spec.token_env} "
            f"(HTTP {self.refused_with})"
        )


def read_token(server: str, spec: BearerToken, audience: str, now: datetime) -> str:
    token = os.environ.get(spec.token_env, "").strip()
    if not token:
        raise McpContractError(f"credential variable {spec.token_env} is not set")
    hold(token)  # a server's error that quotes it is scrubbed
    if spec.format == "jwt":
        problem = jwt_claims_problem(token, audience, now)
        if problem is not None:
            raise McpAuthRejected(
                f"not sending the token from ${spec.token_env} to MCP server {server!r}: {problem}"
            )
    return token


def jwt_claims_problem(token: str, audience: str, now: datetime) -> str | None:
    """Why this JWT must not be sent to ``audience``, or None. Never quotes the token."""
    parts = token.split(".")
    if len(parts) != 3:
        return "it is not a JWT (declare format 'opaque' if the server issued an opaque token)"
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return "its payload is not base64url JSON"
    if not isinstance(claims, dict):
        return "its payload is not a JSON object"
    granted = claims.get("aud")
    audiences = [granted] if isinstance(granted, str) else granted
    if not isinstance(audiences, list) or not audiences:
        return "it names no audience (aud), so it is not bound to this server"
    if not any(isinstance(aud, str) and resource_covers(aud, audience) for aud in audiences):
        return f"its audience {audiences} does not cover {audience}"
    expires = claims.get("exp")
    if isinstance(expires, int | float) and expires <= now.timestamp():
        return f"it expired at {datetime.fromtimestamp(expires, UTC).isoformat()}"
    return None
