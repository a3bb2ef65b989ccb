"""``infra/serve`` started for real: its example environment, with only the machine-specific
values replaced, runs ``agentledger serve`` over mutual TLS to Temporal, a PostgreSQL ledger and
the service's own signing key, behind an nginx TLS edge; a refund goes through end to end.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agentledger.app.devserver import DevServer
from agentledger.app.identity import Issuer
from tests.tls._nginx import free_port, tls_proxy
from tests.tls.conftest import Edges, Pki
from tests.workflows.test_refund_run import REQUEST

pytestmark = [pytest.mark.temporal, pytest.mark.postgres]

SERVE = Path(__file__).resolve().parents[2] / "infra" / "serve"
CLI = [sys.executable, "-m", "agentledger.cli"]
NAMESPACE = "agentledger-prod"
T = TypeVar("T")


def example_environment() -> dict[str, str]:
    text = (SERVE / "serve.env.example").read_text()
    return dict(re.findall(r"^(AGENTLEDGER_[A-Z_]+)=(.*)$", text, re.M))


@pytest.fixture(scope="module")
def namespace(temporal_server: DevServer) -> str:
    """The example's namespace, registered on the dev server (as an operator would)."""

    async def register() -> None:
        client = await Client.connect(temporal_server.address)
        retention = Duration(seconds=86400)
        request = RegisterNamespaceRequest(
            namespace=NAMESPACE, workflow_execution_retention_period=retention
        )
        try:
            await client.workflow_service.register_namespace(request)
        except RPCError as exc:  # registered by an earlier module of this session
            if exc.status != RPCStatusCode.ALREADY_EXISTS:
                raise

    asyncio.run(register())
    return NAMESPACE


def service_environment(
    edges: Edges, pki: Pki, database_url: str, folder: Path
) -> tuple[dict[str, str], Issuer]:
    """The example's variables, with paths, addresses and the database made local."""
    env = example_environment()
    api = Issuer.from_file(
        folder / "agentledger-api.pem", env["AGENTLEDGER_ISSUER_NAME"], create=True
    )
    payload_keys = folder / "payload-keys.json"  # as an operator makes it, for both
    key = base64.b64encode(os.urandom(32)).decode()
    payload_keys.write_text(json.dumps({"active": "2026-12", "keys": {"2026-12": key}}))
    jwks = folder / "idp-jwks.json"
    idp_key = Issuer.from_file(folder / "idp.pem", "https://login.example.com/", create=True)
    jwks.write_text(json.dumps(idp_key.public_jwks()))
    (idp,) = json.loads((SERVE / "oidc-issuers.example.json").read_text())
    idp.pop("jwks_url")
    (folder / "oidc-issuers.json").write_text(json.dumps([{**idp, "jwks_file": str(jwks)}]))
    local = {
        "AGENTLEDGER_TEMPORAL_ADDRESS": edges.mtls,
        "AGENTLEDGER_TEMPORAL_TLS_CA": str(pki.ours.cert),
        "AGENTLEDGER_TEMPORAL_TLS_CERT": str(pki.client.cert),
        "AGENTLEDGER_TEMPORAL_TLS_KEY": str(pki.client.key),
        "AGENTLEDGER_DATABASE_URL": database_url,
        "AGENTLEDGER_ISSUER_KEY": str(folder / "agentledger-api.pem"),
        "AGENTLEDGER_OIDC_ISSUERS": str(folder / "oidc-issuers.json"),
        "AGENTLEDGER_PAYLOAD_KEYS": str(payload_keys),
    }
    assert set(local) <= set(env), set(local) - set(env)
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    full = {
        **base,
        **env,
        **local,
        "AGENTLEDGER_DATA_DIR": str(folder / "data"),
        "AGENTLEDGER_TEMPORAL_TOKEN": "a-token-the-dev-server-does-not-check",
    }
    return full, api


@pytest.fixture
def service(
    namespace: str, edges: Edges, pki: Pki, postgres_database: str, tmp_path: Path
) -> Iterator[tuple[str, Issuer, ssl.SSLContext]]:
    """serve (and a worker) on the example's environment, behind an nginx TLS edge."""
    env, api = service_environment(edges, pki, postgres_database, tmp_path)
    seeded = subprocess.run([*CLI, "seed"], env=env, capture_output=True, text=True, timeout=120)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    port = free_port()
    with (
        _process([*CLI, "worker"], env, "worker polling", tmp_path / "worker.log"),
        _process(
            [*CLI, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env,
            "Uvicorn running",
            tmp_path / "serve.log",
        ),
        tls_proxy(
            tmp_path / "edge",
            f"127.0.0.1:{port}",
            pki.ours.server("agentledger.internal"),
            mode="http",
        ) as edge,
    ):
        trust = ssl.create_default_context(cafile=str(pki.ours.cert))
        yield f"https://127.0.0.1:{edge}", api, trust


def test_the_example_environment_serves_a_refund_end_to_end_behind_tls(
    service: tuple[str, Issuer, ssl.SSLContext],
) -> None:
    url, api, trust = service
    customer = {"Authorization": f"Bearer {api.token('usr_73')}"}
    approver = {"Authorization": f"Bearer {api.token('ops_lead_1')}"}
    with httpx.Client(base_url=url, verify=trust, timeout=30) as http:
        started = http.post("/api/runs", json={"request": REQUEST}, headers=customer)
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        pending = _until(lambda: http.get("/api/approvals", headers=approver).json()["approvals"])
        (approval,) = [a for a in pending if a["run_id"] == run_id]
        decided = http.post(
            f"/api/runs/{run_id}/approvals/{approval['approval_id']}/decision",
            json={"approve": True},
            headers=approver,
        )
        assert decided.status_code == 200, decided.text
        run = _until(lambda: _ended(http.get(f"/api/runs/{run_id}", headers=customer).json()))
    assert run["status"] == "completed", run


def test_a_client_that_trusts_another_ca_or_speaks_plain_http_is_refused(
    service: tuple[str, Issuer, ssl.SSLContext], pki: Pki
) -> None:
    url, _, _ = service
    stranger = ssl.create_default_context(cafile=str(pki.theirs.cert))
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{url}/api/me", verify=stranger)
    plain = httpx.get(url.replace("https", "http") + "/api/me")
    assert plain.status_code == 400 and "HTTPS port" in plain.text


def _ended(body: dict[str, object]) -> dict[str, object] | None:
    run = body["run"]
    assert isinstance(run, dict)
    return run if run["status"] in ("completed", "failed") else None


def _until(probe: Callable[[], T | None], seconds: float = 90) -> T:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(0.3)
    raise AssertionError(f"nothing after {seconds} s")


@contextmanager
def _process(command: list[str], env: dict[str, str], ready: str, log: Path) -> Iterator[None]:
    """A CLI process in the background, once its output says ``ready``; stopped afterwards."""
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while ready not in log.read_text():
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
