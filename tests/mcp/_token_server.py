"""A real MCP peer that demands a bearer token: the Python SDK's server over Streamable HTTP on
127.0.0.1, as a resource server (RFC 9728 metadata, 401 without a valid token).

Tokens are HS256 JWTs signed with the key in ``AGENTLEDGER_TEST_MCP_SIGNING_KEY``; the server
accepts one only when its signature is good, it has not expired and its ``aud`` is this server.
Run as ``python tests/mcp/_token_server.py PORT``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sys
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

SIGNING_KEY_ENV = "AGENTLEDGER_TEST_MCP_SIGNING_KEY"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(key: str, *, aud: str | list[str], sub: str, exp: float) -> str:
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps({"aud": aud, "sub": sub, "exp": int(exp)}).encode())
    signature = hmac.new(key.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


class SignedAudienceVerifier:
    def __init__(self, key: str, resource: str) -> None:
        self._key = key.encode()
        self._resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header, payload, signature = token.split(".")
            expected = hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256)
            if not hmac.compare_digest(_b64(expected.digest()), signature):
                return None
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except ValueError:
            return None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if self._resource not in audiences or claims["exp"] <= time.time():
            return None
        return AccessToken(
            token=token,
            client_id="agentledger",
            scopes=[],
            expires_at=claims["exp"],
            resource=self._resource,
            subject=claims["sub"],
        )


def build(port: int) -> MCPServer:
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        name="agentledger-token-peer",
        version="0.1.0",
        token_verifier=SignedAudienceVerifier(os.environ[SIGNING_KEY_ENV], resource),
        auth=AuthSettings(
            issuer_url="https://auth.agentledger.invalid",
            resource_server_url=resource,
            validate_token_resource=True,
        ),
    )

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def whoami() -> str:
        """The subject of the token this request carried."""
        token = get_access_token()
        return f"subject={token.subject if token else None}"

    return server


if __name__ == "__main__":
    port = int(sys.argv[1])
    build(port).run("streamable-http", host="127.0.0.1", port=port)
