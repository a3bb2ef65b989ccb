"""API fixtures: token issuers the tests hold the keys of, and the app over the real stack.

The local-issuer stand-in is an Ed25519 key made here, trusted the way ``serve`` trusts the data
directory's issuer (it speaks for the whole directory); the external one speaks for ``acme``
only, its claims checked against the directory. The workers bind both as the API does, as a
deployment sets the same ``AGENTLEDGER_OIDC_ISSUERS`` on both.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI

from agentledger.api import API_AUDIENCE, TrustedIssuer, create_app
from agentledger.app.devserver import DevServer
from agentledger.app.runtime import Runtime
from agentledger.domain.principal import Principal
from bench._stack import open_stack
from tests._temporal import Harness

LOCAL = "https://local.agentledger.test"
EXTERNAL = "https://idp.example.test"
SEEDED_TENANTS = ("acme", "globex", "northwind")
EXTERNAL_PEOPLE = (
    # Directory entries for the external issuer's people: it vouches for who, not what.
    Principal(user_id="auditor@example", tenant_id="acme", roles=frozenset({"support_agent"})),
    Principal(user_id="curator@acme", tenant_id="acme", roles=frozenset({"memory_curator"})),
)


@dataclass(frozen=True)
class Signer:
    issuer: str
    key: Ed25519PrivateKey
    kid: str

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "EdDSA", "use": "sig"}]}

    def token(self, sub: str, *, ttl: int = 600, **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": self.issuer,
            "sub": sub,
            "aud": API_AUDIENCE,
            "iat": now,
            "nbf": now,
            "exp": now + ttl,
            "jti": uuid.uuid4().hex,
            **claims,
        }
        return jwt.encode(payload, self.key, algorithm="EdDSA", headers={"kid": self.kid})


@pytest.fixture(scope="session")
def local_signer() -> Signer:
    return Signer(LOCAL, Ed25519PrivateKey.generate(), "local-1")


@pytest.fixture(scope="session")
def external_signer() -> Signer:
    return Signer(EXTERNAL, Ed25519PrivateKey.generate(), "idp-1")


def issuers(local: Signer, external: Signer) -> list[TrustedIssuer]:
    return [
        TrustedIssuer(issuer=local.issuer, jwks=local.jwks(), directory=True),
        TrustedIssuer(
            issuer=external.issuer,
            jwks=external.jwks(),
            tenant_claim="org",
            roles_claim="groups",
            tenants=("acme",),
        ),
    ]


@pytest.fixture
async def harness(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> AsyncIterator[Harness]:
    """The stack, its workers binding the API's issuers to the tenants the API does."""
    queue = f"api-{uuid.uuid4().hex[:10]}"
    stack = await open_stack(tmp_path, temporal_server.address, database_url, queue)
    for person in EXTERNAL_PEOPLE:
        stack.runtime.ledger.put_principal(person)
    bound = {LOCAL: SEEDED_TENANTS, EXTERNAL: ("acme",)}
    stack = replace(stack, settings=replace(stack.settings, issuer_tenants=bound))
    async with Runtime(stack.settings, stack.runtime.ledger).worker(stack.client):
        yield stack
    stack.runtime.ledger.engine.dispose()


def stack_issuer(harness: Harness) -> TrustedIssuer:
    """The stack's own issuer (what ``agentledger token issue`` signs with), as serve trusts it."""
    return TrustedIssuer(
        issuer=harness.issuer.name, jwks=harness.issuer.public_jwks(), directory=True
    )


@pytest.fixture
def app(harness: Harness, local_signer: Signer, external_signer: Signer) -> FastAPI:
    """Decisions and replies are signed by the stack's issuer, whose key its runs pinned."""
    return create_app(
        harness.runtime.ledger,
        harness.client,
        harness.settings.task_queue,
        [*issuers(local_signer, external_signer), stack_issuer(harness)],
        signer=harness.issuer,
        max_body_bytes=16 * 1024,
    )


Http = Callable[[str], httpx.AsyncClient]


@pytest.fixture
async def http(app: FastAPI, local_signer: Signer) -> AsyncIterator[Http]:
    """``http("ops_lead_1")``: a client in the app's own event loop, signed in as that subject."""
    clients: list[httpx.AsyncClient] = []

    def as_(subject: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {local_signer.token(subject)}"} if subject else {}
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://api.test", headers=headers
        )
        clients.append(client)
        return client

    yield as_
    for client in clients:
        await client.aclose()
