"""Tokens from a real identity provider, panva's certified ``oidc-provider`` (npm, infra/oidc),
through the CLI and the API: a person signs in by device code and approves, the run recording
their subject and the provider's token id; a service's client-credentials token starts a run;
an expired token, a token for another API and one from a provider not bound to the subject's
tenant are each refused by name."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from pathlib import Path

import httpx
import jwt

from agentledger.app.oidc.cache import TokenCache
from agentledger.domain.events import ApprovalGranted
from tests.oidc._provider import INTAKE, Person
from tests.oidc.conftest import Served

ROOT = Path(__file__).resolve().parents[2]
REFUND = "My order ord_4821 arrived broken. Please refund it."


def cli_env(served: Served, data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "AGENTLEDGER_DATA_DIR": str(data_dir),
        "AGENTLEDGER_API_URL": served.url,
        "AGENTLEDGER_OIDC_ISSUER": served.issuer,
        **extra,
    }


async def cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentledger.cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode().strip(), err.decode().strip()


async def pending_refund(served: Served) -> tuple[str, str]:
    """A refund awaiting approval, started by its customer with the stack's own issuer."""
    local = served.harness.issuer
    async with httpx.AsyncClient(base_url=served.url, timeout=60) as api:
        started = await api.post(
            "/api/runs",
            json={"pack": "support", "request": REFUND},
            headers={"Authorization": f"Bearer {local.token('usr_73')}"},
        )
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        await served.harness.until_approval_or_end(run_id)
        lead = {"Authorization": f"Bearer {local.token('ops_lead_1')}"}
        for _ in range(200):
            inbox = (await api.get("/api/approvals", headers=lead)).json()["approvals"]
            mine = [a["approval_id"] for a in inbox if a["run_id"] == run_id]
            if mine:
                return run_id, mine[0]
            await asyncio.sleep(0.05)
    raise AssertionError("the approval never reached the inbox")


async def device_login(env: dict[str, str], person: Person, login: str) -> tuple[int, str]:
    """``agentledger login`` as a person: the CLI shows a code, the person confirms it at the
    provider's page, the CLI (polling meanwhile) receives the token."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentledger.cli", "login", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    shown = (await proc.stdout.readline()).decode()
    found = re.search(r"open (\S+) and confirm the code (\S+)", shown)
    assert found, shown
    assert await person.confirm(found.group(1), login) == "Signed in"
    out, err = await proc.communicate()
    return proc.returncode or 0, shown + out.decode() + err.decode()


async def test_a_person_signs_in_by_device_code_and_their_approval_records_subject_and_token(
    served: Served, tmp_path: Path
) -> None:
    run_id, approval_id = await pending_refund(served)
    env = cli_env(served, tmp_path / "lead")

    code, said = await device_login(env, Person(served.issuer), "ops_lead_1")
    assert code == 0, said
    assert f"signed in as ops_lead_1 at {served.issuer} (device sign-in)" in said
    cache = TokenCache(tmp_path / "lead")
    assert stat.S_IMODE(cache.path.stat().st_mode) == 0o600
    cached = cache.get(f"{served.issuer} agentledger-cli ")
    assert cached is not None and cached.refresh_token
    token_id = jwt.decode(cached.access_token, options={"verify_signature": False})["jti"]

    assert await cli(env, "whoami") == (
        0,
        "ops_lead_1 tenant=acme roles=approver,canceller,forker,policy_approver,steerer,"
        f"support_agent issuer={served.issuer}", "",
    )  # fmt: skip
    # No --as: the provider's token says who decides; the API signs for them.
    decided = await cli(env, "approve", run_id, approval_id)
    assert decided == (0, f"{approval_id} granted by ops_lead_1", ""), decided

    events = await served.harness.finish(run_id)
    (grant,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert grant.approver == "ops_lead_1"
    assert grant.assertion is not None
    assert grant.assertion.subject == "ops_lead_1"
    assert grant.assertion.issuer == served.harness.issuer.name  # the service's key signed...
    assert grant.assertion.on_behalf_of_issuer == served.issuer  # ...for the provider's caller
    assert grant.assertion.on_behalf_of_token_id == token_id


async def test_a_services_client_credentials_token_starts_a_run_in_its_own_name(
    served: Served, tmp_path: Path
) -> None:
    env = cli_env(
        served, tmp_path / "svc",
        AGENTLEDGER_OIDC_CLIENT_ID=INTAKE.client_id,
        AGENTLEDGER_OIDC_CLIENT_SECRET=INTAKE.secret or "",
    )  # fmt: skip
    code, run_id, err = await cli(env, "run", "support", "Where is order ord_4823?")
    assert code == 0, err
    await served.harness.finish(run_id)
    row = served.harness.runtime.ledger.get_run(run_id)
    assert row is not None and row.principal_id == INTAKE.client_id

    # The token was cached, not asked for again: the same one proves who the next call is.
    cached = TokenCache(tmp_path / "svc").get(f"{served.issuer} {INTAKE.client_id} ")
    assert cached is not None and cached.subject == INTAKE.client_id
    assert await cli(env, "whoami") == (
        0, f"{INTAKE.client_id} tenant=acme roles=customer issuer={served.issuer}", ""
    )  # fmt: skip
    assert TokenCache(tmp_path / "svc").get(f"{served.issuer} {INTAKE.client_id} ") == cached

    named = await cli(env, "run", "support", "Where is order ord_4823?", "--user", "usr_73")
    assert named[0] == 2 and "your token says who you are" in named[2]
