"""Each way a token from the identity provider (panva's ``oidc-provider``, infra/oidc) fails is
a named error: an expired token, a token for another API, a provider that does not speak for
the subject's tenant, a provider that does not answer, a device code nobody confirmed in time
and a sign-in the person refused. An expired token in the cache is renewed, not sent."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentledger.api import TrustedIssuer, create_app
from agentledger.app.oidc import api_client, flows
from agentledger.app.oidc.cache import TokenCache
from agentledger.app.oidc.errors import (
    DeviceCodeExpired,
    IssuerNotBound,
    IssuerUnreachable,
    SignInDenied,
    TokenExpired,
    WrongAudience,
)
from agentledger.app.oidc.session import current_token, sign_in
from agentledger.app.oidc.settings import ProviderSettings
from tests.oidc._provider import (
    GLOBEX_BOT,
    HURRIED_CLI,
    INTAKE,
    OTHER_RESOURCE,
    PERSON_CLI,
    SHORT_RESOURCE,
    SHORT_TOKEN_SECONDS,
    Client,
    Person,
    free_port,
)
from tests.oidc.conftest import Served
from tests.oidc.test_oidc_tokens import cli, cli_env, device_login


def service(served: Served, client: Client, resource: str | None = None) -> ProviderSettings:
    return ProviderSettings(served.issuer, client.client_id, client.secret, resource=resource)


async def test_an_expired_token_is_refused_and_the_cli_renews_it_instead_of_sending_it(
    served: Served, tmp_path: Path
) -> None:
    provider = service(served, INTAKE, SHORT_RESOURCE)
    cache = TokenCache(tmp_path)
    async with httpx.AsyncClient() as http:
        first = await current_token(provider, cache, http)
        await asyncio.sleep(SHORT_TOKEN_SECONDS + 1)
        with pytest.raises(TokenExpired) as refused:
            await api_client.call(http, served.url, first.access_token, "GET", "/api/me")
        assert refused.value.reason_code == "token-expired"
        renewed = await current_token(provider, cache, http)
    assert renewed.access_token != first.access_token and renewed.expires_at > first.expires_at
    assert cache.get(provider.cache_key) == renewed


async def test_a_persons_expired_token_is_renewed_with_their_refresh_token(
    served: Served, tmp_path: Path
) -> None:
    env = cli_env(served, tmp_path, AGENTLEDGER_OIDC_RESOURCE=SHORT_RESOURCE)
    code, said = await device_login(env, Person(served.issuer), "ops_lead_1")
    assert code == 0, said
    key = f"{served.issuer} {PERSON_CLI.client_id} {SHORT_RESOURCE}"
    before = TokenCache(tmp_path).get(key)
    assert before is not None and before.refresh_token
    # Within its last seconds the token is not sent: the refresh token buys a new one.
    rc, out, err = await cli(env, "whoami")
    assert rc == 0 and out.startswith("ops_lead_1 tenant=acme"), err
    after = TokenCache(tmp_path).get(key)
    assert after is not None and after.access_token != before.access_token

    assert await cli(env, "logout") == (0, f"signed out of {served.issuer}", "")
    rc, _, err = await cli(env, "whoami")
    assert rc == 2
    assert err == f"agentledger: not signed in to {served.issuer}: run `agentledger login`"


async def test_a_token_for_another_api_is_refused_as_wrong_audience(
    served: Served, tmp_path: Path
) -> None:
    provider = service(served, INTAKE, OTHER_RESOURCE)
    async with httpx.AsyncClient() as http:
        token = await current_token(provider, TokenCache(tmp_path), http)
        assert jwt.decode(token.access_token, options={"verify_signature": False})["aud"] == (
            "another-api"
        )
        with pytest.raises(WrongAudience) as refused:
            await api_client.call(http, served.url, token.access_token, "GET", "/api/me")
    assert refused.value.reason_code == "wrong-audience"

    env = cli_env(
        served, tmp_path / "cli",
        AGENTLEDGER_OIDC_CLIENT_ID=INTAKE.client_id,
        AGENTLEDGER_OIDC_CLIENT_SECRET=INTAKE.secret or "",
        AGENTLEDGER_OIDC_RESOURCE=OTHER_RESOURCE,
    )  # fmt: skip
    assert await cli(env, "run", "support", "Where is order ord_4823?") == (
        5, "", "agentledger: the API refused the token: the token is not for this API "
        "(audience 'agentledger-api' expected)",
    )  # fmt: skip


async def test_a_token_from_a_provider_not_bound_to_the_subjects_tenant_is_refused(
    served: Served, tmp_path: Path
) -> None:
    # The provider vouches for Globex's bot, but the API binds it to Acme only.
    async with httpx.AsyncClient() as http:
        token = await current_token(service(served, GLOBEX_BOT), TokenCache(tmp_path), http)
        assert token.subject == GLOBEX_BOT.client_id
        with pytest.raises(IssuerNotBound) as refused:
            body = {"pack": "support", "request": "Where is order ord_4823?"}
            await api_client.call(http, served.url, token.access_token, "POST", "/api/runs", body)
    assert refused.value.reason_code == "issuer-not-bound"
    assert served.harness.runtime.ledger.list_runs() == []  # nothing was started


async def test_a_provider_that_does_not_answer_is_named_on_both_sides(
    served: Served, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    async with httpx.AsyncClient() as http:
        with pytest.raises(IssuerUnreachable, match=re.escape(f"identity provider {dead}")):
            await sign_in(ProviderSettings(dead), TokenCache(tmp_path), http, show=print)

    # The API, trusting a provider whose discovery document cannot be fetched: 503, named.
    key = Ed25519PrivateKey.generate()
    app = create_app(
        served.harness.runtime.ledger,
        served.harness.client,
        served.harness.settings.task_queue,
        [TrustedIssuer(issuer=dead, tenants=("acme",))],
        signer=served.harness.issuer,
    )
    token = jwt.encode(
        {"iss": dead, "sub": "ops_lead_1", "aud": "agentledger-api", "exp": 2**40},
        key, algorithm="EdDSA", headers={"kid": "k1"},
    )  # fmt: skip
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api.test") as api:
        answer = await api.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 503
    assert answer.json()["type"].endswith("/issuer-unreachable")


async def test_a_device_code_nobody_confirms_in_time_expires_by_name(
    served: Served, tmp_path: Path
) -> None:
    hurried = ProviderSettings(served.issuer, HURRIED_CLI.client_id, scope="openid")
    async with httpx.AsyncClient() as http:
        with pytest.raises(DeviceCodeExpired) as expired:
            await sign_in(hurried, TokenCache(tmp_path), http, show=lambda _code: None)
    assert expired.value.reason_code == "expired_token"
    assert TokenCache(tmp_path).get(hurried.cache_key) is None


async def test_a_refused_device_sign_in_is_denied_by_name(served: Served, tmp_path: Path) -> None:
    person = ProviderSettings(served.issuer, PERSON_CLI.client_id, scope="openid")
    async with httpx.AsyncClient() as http:
        endpoints = await flows.discover(http, served.issuer)
        code = await flows.start_device_login(http, person, endpoints)
        assert code.verification_uri_complete is not None
        await Person(served.issuer).refuse(code.verification_uri_complete)
        with pytest.raises(SignInDenied) as denied:
            await flows.finish_device_login(http, person, endpoints, code)
    assert denied.value.reason_code == "access_denied"
