"""Every request needs a token a trusted issuer signed for us, still valid; else 401."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentledger.api import PROBLEM_BASE
from tests._temporal import Harness
from tests.api.conftest import Http, Signer


def problem_type(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == response.status_code
    return str(body["type"]).removeprefix(PROBLEM_BASE)


async def test_a_request_without_a_token_is_401_problem_json(http: Http) -> None:
    response = await http("").get("/api/runs")
    assert response.status_code == 401
    assert problem_type(response) == "unauthenticated"
    assert response.headers["www-authenticate"].startswith("Bearer")


def _forged(signer: Signer, sub: str) -> str:
    """Same issuer and kid, another key: the signature cannot verify."""
    impostor = Signer(signer.issuer, Ed25519PrivateKey.generate(), signer.kid)
    return impostor.token(sub)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda s: s.token("ops_lead_1", ttl=-120), "token-expired"),
        (lambda s: s.token("ops_lead_1", aud="someone-else"), "wrong-audience"),
        (lambda s: s.token("ops_lead_1", nbf=int(time.time()) + 3600), "invalid-token"),
        (lambda s: _forged(s, "ops_lead_1"), "invalid-token"),
        (lambda s: Signer("https://evil.test", s.key, s.kid).token("x"), "issuer-not-trusted"),
        (lambda s: s.token("nobody_in_directory"), "invalid-token"),
        (
            lambda s: jwt.encode(
                {"iss": s.issuer, "sub": "ops_lead_1", "aud": "agentledger-api", "exp": 2**40},
                "shared-secret-guess-000000000000000000",
                algorithm="HS256",
                headers={"kid": s.kid},
            ),
            "invalid-token",
        ),
        (lambda s: "not.a.jwt", "invalid-token"),
    ],
    ids=[
        "expired",
        "wrong-audience",
        "not-yet-valid",
        "bad-signature",
        "untrusted-issuer",
        "unknown-subject",
        "hs256",
        "garbage",
    ],
)
async def test_bad_tokens_are_refused_with_401(
    http: Http, local_signer: Signer, make: object, expected: str
) -> None:
    token = make(local_signer)  # type: ignore[operator]
    response = await http("").get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401, response.text
    assert problem_type(response) == expected


async def test_the_local_issuer_takes_tenant_and_roles_from_the_directory(http: Http) -> None:
    me = (await http("ops_lead_1").get("/api/me")).json()
    assert (me["user_id"], me["tenant_id"]) == ("ops_lead_1", "acme")
    assert "approver" in me["roles"]


async def test_an_external_issuer_names_who_and_the_directory_says_tenant_and_roles(
    http: Http, external_signer: Signer
) -> None:
    token = external_signer.token("auditor@example", org="acme", groups=["support_agent"])
    client = http("")
    me = (await client.get("/api/me", headers={"Authorization": f"Bearer {token}"})).json()
    assert me == {
        "subject": "auditor@example",
        "issuer": external_signer.issuer,
        "user_id": "auditor@example",
        "tenant_id": "acme",
        "roles": ["support_agent"],
    }
    silent = external_signer.token("auditor@example")  # claims nothing: the directory says
    me = (await client.get("/api/me", headers={"Authorization": f"Bearer {silent}"})).json()
    assert (me["tenant_id"], me["roles"]) == ("acme", ["support_agent"])


@pytest.mark.parametrize(
    ("subject", "claims", "expected"),
    [
        ("nobody@example", {"org": "acme"}, "issuer-not-bound"),  # not in the directory
        ("ops_globex", {"org": "globex"}, "issuer-not-bound"),  # another tenant's person
        ("auditor@example", {"org": "globex"}, "claims-disagree"),
        ("auditor@example", {"org": "acme", "groups": ["approver"]}, "claims-disagree"),
    ],
)
async def test_an_external_issuer_speaks_only_for_its_tenants_and_as_the_directory_says(
    http: Http, external_signer: Signer, subject: str, claims: dict[str, Any], expected: str
) -> None:
    token = external_signer.token(subject, **claims)
    response = await http("").get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401, response.text
    assert problem_type(response) == expected
    assert "\n" not in response.json()["detail"]


async def test_the_stacks_own_issuer_signs_tokens_serve_accepts(
    http: Http, harness: Harness
) -> None:
    """What `agentledger token issue --as ops_lead_1` prints: the data directory's issuer."""
    token = harness.issuer.token("ops_lead_1")
    me = (await http("").get("/api/me", headers={"Authorization": f"Bearer {token}"})).json()
    assert (me["issuer"], me["user_id"], me["tenant_id"]) == (
        harness.issuer.name,
        "ops_lead_1",
        "acme",
    )
