"""TLS and mutual TLS to Temporal, for real: an nginx edge with certificates this run made.

A client that trusts the private CA (and, behind mutual TLS, holds a certificate it signed) runs
a whole refund through the edge; every way the trust can be wrong is refused at once with a
named, one-line error, never retried and never a hang.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from agentledger.app.config import Settings, TemporalSecurity
from agentledger.app.errors import ConnectionRefused
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect
from bench.harness import Harness
from tests.e2e.test_cli import cli
from tests.tls.conftest import Edges, Pki, security
from tests.workflows.test_refund_run import REQUEST, approve_pending, refund_rows

pytestmark = pytest.mark.temporal


def settings(tmp_path: Path, address: str, secure: TemporalSecurity) -> Settings:
    return Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        temporal_address=address,
        task_queue=f"tls-{uuid.uuid4().hex[:8]}",
        temporal_security=secure,
    )


async def test_a_client_with_a_certificate_from_the_ca_runs_a_refund_through_mutual_tls(
    edges: Edges, pki: Pki, tmp_path: Path
) -> None:
    config = settings(tmp_path, edges.mtls, security(pki.ours.cert, pki.client))
    runtime = Runtime.open(config)
    runtime.seed()
    client = await connect(config, attempts=1)
    h = Harness(runtime, client, config)
    async with runtime.worker(client):
        run_id = await h.start(REQUEST)
        await approve_pending(h, run_id)
        events = await h.finish(run_id)
    assert events[-1].kind == "run_completed"
    assert refund_rows(h) == 1
    runtime.ledger.engine.dispose()


async def test_tls_with_the_private_ca_connects_without_a_client_certificate(
    edges: Edges, pki: Pki, tmp_path: Path
) -> None:
    client = await connect(settings(tmp_path, edges.tls, security(pki.ours.cert)), attempts=1)
    assert (await client.count_workflows("WorkflowType = 'nothing'")).count == 0


@pytest.mark.parametrize(
    ("edge", "trust", "reason", "says"),
    [
        ("mtls", "no client certificate", "client_certificate_refused", "none was given"),
        ("mtls", "a client certificate of another CA", "client_certificate_refused", "refused"),
        ("tls", "another CA", "server_certificate_untrusted", "not signed by the CA in"),
        ("tls", "the wrong server name", "server_name_mismatch", "not other.internal"),
        ("expired", "the private CA", "server_certificate_expired", "expired certificate"),
    ],
)
async def test_wrong_trust_is_refused_at_once_with_a_named_reason(
    edges: Edges, pki: Pki, tmp_path: Path, edge: str, trust: str, reason: str, says: str
) -> None:
    secure = {
        "no client certificate": security(pki.ours.cert),
        "a client certificate of another CA": security(pki.ours.cert, pki.stranger),
        "another CA": security(pki.theirs.cert, pki.client),
        "the wrong server name": security(pki.ours.cert, server_name="other.internal"),
        "the private CA": security(pki.ours.cert),
    }[trust]
    with pytest.raises(ConnectionRefused, match=says) as refused:
        await connect(settings(tmp_path, getattr(edges, edge), secure), attempts=20)
    assert refused.value.reason == reason
    assert "\n" not in str(refused.value)


def test_a_command_behind_the_wrong_ca_says_so_in_one_line_with_an_honest_exit(
    edges: Edges, pki: Pki, tmp_path: Path
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")},
        "AGENTLEDGER_DATA_DIR": str(tmp_path),
        "AGENTLEDGER_TEMPORAL_ADDRESS": edges.tls,
        "AGENTLEDGER_TEMPORAL_TLS": "1",
        "AGENTLEDGER_TEMPORAL_TLS_CA": str(pki.theirs.cert),
        "AGENTLEDGER_TEMPORAL_TLS_SERVER_NAME": "temporal-frontend.internal",
    }
    assert cli(env, "seed").returncode == 0
    done = cli(env, "run", "support", REQUEST, "--user", "usr_73", timeout=120)
    assert done.returncode == 3, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "not signed by the CA in AGENTLEDGER_TEMPORAL_TLS_CA" in line
