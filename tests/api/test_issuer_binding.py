"""Through the API, an external issuer speaks only for the directory's people of its tenants: a
token from Globex's identity provider naming Acme's approver, and claiming Acme and the approver
role, decides nothing; Acme's own provider does, as the directory says its person may."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentledger.api import create_app, issuers_from
from agentledger.domain.events import ApprovalGranted
from agentledger.domain.principal import Principal
from tests._temporal import Harness
from tests.api.conftest import EXTERNAL, Http, Signer, issuers, stack_issuer
from tests.api.test_authentication import problem_type
from tests.api.test_runs_api import pending_refund, refunds

GLOBEX_IDP = "https://idp.globex.test"


def _globex_api(
    harness: Harness, tmp_path: Path, local: Signer, external: Signer
) -> httpx.AsyncClient:
    """The API, also trusting Globex's provider for Globex's people (its configuration entry,
    as ``AGENTLEDGER_OIDC_ISSUERS`` holds it)."""
    globex = Signer(GLOBEX_IDP, Ed25519PrivateKey.generate(), "globex-1")
    jwks = tmp_path / "globex-jwks.json"
    jwks.write_text(json.dumps(globex.jwks()))
    entry = {"issuer": GLOBEX_IDP, "jwks_file": str(jwks), "tenant_claim": "org",
             "roles_claim": "groups", "tenants": ["globex"]}  # fmt: skip
    app = create_app(
        harness.runtime.ledger,
        harness.client,
        harness.settings.task_queue,
        [*issuers(local, external), stack_issuer(harness), *issuers_from(json.dumps([entry]))],
        signer=harness.issuer,
    )
    token = globex.token("ops_lead_1", org="acme", groups=["approver"])
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://api.test",
        headers={"Authorization": f"Bearer {token}"},
    )


async def test_another_tenants_provider_cannot_approve_as_an_acme_approver(
    http: Http,
    harness: Harness,
    tmp_path: Path,
    local_signer: Signer,
    external_signer: Signer,
) -> None:
    # Acme's own provider's approver, listed when the approval is asked.
    harness.runtime.ledger.put_principal(
        Principal(user_id="lead@acme", tenant_id="acme", roles=frozenset({"approver"}))
    )
    run_id, approval_id = await pending_refund(http, harness)
    url = f"/api/runs/{run_id}/approvals/{approval_id}/decision"
    async with _globex_api(harness, tmp_path, local_signer, external_signer) as globex:
        me = await globex.get("/api/me")
        assert me.status_code == 401 and problem_type(me) == "issuer-not-bound"
        forged = await globex.post(url, json={"approve": True})
    assert forged.status_code == 401 and problem_type(forged) == "issuer-not-bound"
    assert forged.json()["detail"] == f"issuer '{GLOBEX_IDP}' does not speak for 'ops_lead_1'"
    assert refunds(harness) == 0
    state = await harness.until_approval_or_end(run_id)
    assert approval_id in state.pending_approvals

    # Acme's own provider speaks for Acme's approver, with the directory's roles.
    acme = http("")
    acme.headers["Authorization"] = f"Bearer {external_signer.token('lead@acme', org='acme')}"
    granted = await acme.post(url, json={"approve": True})
    assert granted.status_code == 200, granted.text
    events = await harness.finish(run_id)
    (grant,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert grant.assertion is not None and grant.assertion.on_behalf_of_issuer == EXTERNAL
    assert refunds(harness) == 1
    assert uuid.UUID(hex=grant.assertion.on_behalf_of_token_id or "")
