"""A private PKI and nginx TLS edges in front of the session's Temporal dev server.

The dev server has no TLS of its own; the edges terminate TLS (and mutual TLS) the way a
production frontend or gateway does, with certificates this test run made.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentledger.app.config import TemporalSecurity
from agentledger.app.devserver import DevServer
from tests.tls._nginx import tls_proxy
from tests.tls._pki import Authority, Pair

FRONTEND = "temporal-frontend.internal"
"""The frontend's name in infra/serve's example; the test's server certificates carry it."""


@dataclass(frozen=True)
class Pki:
    ours: Authority
    theirs: Authority
    """Another CA: what an attacker's or a misconfigured client's certificates are signed by."""
    client: Pair
    stranger: Pair


@dataclass(frozen=True)
class Edges:
    """Loopback addresses of the TLS edges in front of the same dev server."""

    tls: str
    mtls: str
    expired: str


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ours, theirs = Authority(folder, "ours"), Authority(folder, "theirs")
    return Pki(ours, theirs, ours.client("agentledger-api"), theirs.client("agentledger-api"))


@pytest.fixture(scope="session")
def edges(
    temporal_server: DevServer, pki: Pki, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Edges]:
    folder = tmp_path_factory.mktemp("edges")
    good, old = pki.ours.server(FRONTEND), pki.ours.server(FRONTEND, expired=True)
    upstream = temporal_server.address
    with (
        tls_proxy(folder / "tls", upstream, good, mode="grpc") as tls,
        tls_proxy(folder / "mtls", upstream, good, mode="grpc", client_ca=pki.ours.cert) as mtls,
        tls_proxy(folder / "expired", upstream, old, mode="grpc") as expired,
    ):
        yield Edges(f"127.0.0.1:{tls}", f"127.0.0.1:{mtls}", f"127.0.0.1:{expired}")


def security(
    ca: Path | None, client: Pair | None = None, server_name: str | None = FRONTEND
) -> TemporalSecurity:
    return TemporalSecurity(
        tls=True,
        ca_cert=ca,
        client_cert=client.cert if client else None,
        client_key=client.key if client else None,
        server_name=server_name,
    )
