"""The demo's one secret, the data directory's signing key (it signs the approval), is found
nowhere else afterwards: not in any file of the data directory (the ledger with its packets, the
Temporal server's database and log), not in any workflow history fetched from the server, not in
what the command printed. (A provider's key: ``tests/providers/test_secrets.py``; an MCP bearer
token: ``tests/mcp/test_bearer_run.py``.)"""

from __future__ import annotations

import asyncio
import base64
import subprocess
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import Client

from tests.e2e.test_cli import CLI, embedded_env_at

KEY_FILE = Path("identity") / "issuer.pem"


def encodings(key_file: Path) -> dict[str, bytes]:
    """The private key as it could leak: its PEM body, the raw seed in base64, base64url, hex."""
    pem = key_file.read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, Ed25519PrivateKey)
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    body = b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))
    return {
        "pem": body,
        "base64": base64.b64encode(raw).rstrip(b"="),
        "base64url": base64.urlsafe_b64encode(raw).rstrip(b"="),
        "hex": raw.hex().encode(),
        "raw": raw,
    }


async def histories(address: str) -> list[bytes]:
    client = await Client.connect(address)
    found = []
    async for execution in client.list_workflows():
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        found.append((await handle.fetch_history()).to_json().encode())
    return found


def test_the_demo_leaves_its_signing_key_nowhere_but_its_key_file(tmp_path: Path) -> None:
    env = embedded_env_at(tmp_path)
    try:
        demo = subprocess.run([*CLI, "demo"], env=env, capture_output=True, timeout=300)
        assert demo.returncode == 0, demo.stderr.decode()
        assert b"approving as ops_lead_1" in demo.stdout  # a signed approval was made
        address = f"127.0.0.1:{env['AGENTLEDGER_TEMPORAL_PORT']}"
        fetched = asyncio.run(histories(address))
    finally:
        subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)

    secret = encodings(tmp_path / KEY_FILE)
    places = {
        str(path.relative_to(tmp_path)): path.read_bytes()
        for path in tmp_path.rglob("*")
        if path.is_file() and path != tmp_path / KEY_FILE
    }
    assert {"ledger.db", "temporal.log"} <= set(places), sorted(places)
    assert fetched, "no workflow history was fetched: nothing of the server was scanned"
    places |= {f"history {i}": text for i, text in enumerate(fetched)}
    places |= {"stdout": demo.stdout, "stderr": demo.stderr}
    leaks = [
        (where, form) for where, text in places.items() for form, v in secret.items() if v in text
    ]
    assert not leaks, leaks
