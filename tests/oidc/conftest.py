"""The identity tests' stack: a real OIDC provider (panva's ``oidc-provider``, see
``_provider``), the stack with its workers, and ``agentledger serve``'s app on a real loopback
port, trusting the provider (keys by OpenID discovery) for Acme's people and services only.

The workers bind the provider to Acme as the API does (the same ``AGENTLEDGER_OIDC_ISSUERS``
on both, as a deployment sets it). The API signs decisions with the stack's issuer, whose key
its runs pinned, on behalf of the provider's callers.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import uvicorn

from agentledger.api import TrustedIssuer, create_app
from agentledger.app.devserver import DevServer
from agentledger.app.runtime import Runtime
from agentledger.domain.principal import Principal
from bench._stack import open_stack
from bench.harness import Harness
from tests.oidc._provider import GLOBEX_BOT, INTAKE, oidc_provider

SERVICES = (
    # The directory lists a service by its client id: client-credentials tokens have it as sub.
    Principal(user_id=INTAKE.client_id, tenant_id="acme", roles=frozenset({"customer"})),
    Principal(user_id=GLOBEX_BOT.client_id, tenant_id="globex", roles=frozenset({"customer"})),
)


@pytest.fixture(scope="session")
def issuer_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with oidc_provider(tmp_path_factory.mktemp("oidc")) as issuer:
        yield issuer


@dataclass(frozen=True)
class Served:
    harness: Harness
    url: str
    issuer: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def served(
    temporal_server: DevServer, issuer_url: str, tmp_path: Path
) -> AsyncIterator[Served]:
    queue = f"oidc-{uuid.uuid4().hex[:10]}"
    database = f"sqlite:///{tmp_path / 'ledger.db'}"
    stack = await open_stack(tmp_path / "stack", temporal_server.address, database, queue)
    for service in SERVICES:
        stack.runtime.ledger.put_principal(service)
    bound = {issuer_url: ("acme",)}
    stack = replace(stack, settings=replace(stack.settings, issuer_tenants=bound))
    trusted = [
        # Keys from the provider's discovery document; no leeway: a 5-second token dies on time.
        TrustedIssuer(issuer=issuer_url, tenants=("acme",), leeway_seconds=0),
        TrustedIssuer(issuer=stack.issuer.name, jwks=stack.issuer.public_jwks(), directory=True),
    ]
    app = create_app(stack.runtime.ledger, stack.client, queue, trusted, signer=stack.issuer)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    async with Runtime(stack.settings, stack.runtime.ledger).worker(stack.client):
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        try:
            yield Served(stack, f"http://127.0.0.1:{port}", issuer_url)
        finally:
            server.should_exit = True
            await serving
    stack.runtime.ledger.engine.dispose()
