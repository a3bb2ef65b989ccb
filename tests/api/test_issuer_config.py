"""``AGENTLEDGER_OIDC_ISSUERS``: what ``serve`` trusts, and a clear error when it is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.api import API_AUDIENCE, TrustedIssuer, issuers_from
from agentledger.app.errors import ConfigError


def test_issuers_come_from_inline_json_or_a_file(tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": []}))
    entries = [
        {"issuer": "https://a", "jwks_url": "https://a/jwks", "roles_claim": "groups",
         "tenants": ["acme"]},
        {"issuer": "https://b", "audience": "x", "jwks_file": str(jwks), "tenant_claim": "org",
         "tenants": ["globex", "initech/eu"]},
    ]  # fmt: skip
    inline = issuers_from(json.dumps(entries))
    listed = tmp_path / "issuers.json"
    listed.write_text(json.dumps(entries))
    assert issuers_from(str(listed)) == inline
    assert inline[0] == TrustedIssuer(
        issuer="https://a",
        audience=API_AUDIENCE,
        jwks_url="https://a/jwks",
        roles_claim="groups",
        tenants=("acme",),
    )
    assert inline[1].tenants == ("globex", "initech/eu")
    assert (inline[1].audience, inline[1].jwks, inline[1].tenant_claim) == (
        "x",
        {"keys": []},
        "org",
    )
    assert issuers_from("") == [] and issuers_from(None) == []


@pytest.mark.parametrize(
    "value",
    [
        '[{"issuer": "https://a", "jwks_url": "u", "jwks_file": "f", "tenants": ["acme"]}]',
        '[{"issuer": "https://a", "tenants": ["acme"], "leeway_seconds": 301}]',
        '[{"issuer": "https://a", "tenants": ["acme"], "leeway_seconds": "30"}]',
        '[{"jwks_url": "u", "tenants": ["acme"]}]',
        '[{"issuer": "https://a", "jwks_url": "u"}]',  # bound to no tenant: speaks for nobody
        '[{"issuer": "https://a", "jwks_url": "u", "tenants": []}]',
        '[{"issuer": "https://a", "jwks_url": "u", "tenants": "acme"}]',
        "[not json",
        "/no/such/file.json",
    ],
)
def test_a_wrong_issuer_configuration_is_a_config_error(value: str) -> None:
    with pytest.raises(ConfigError, match="AGENTLEDGER_OIDC_ISSUERS"):
        issuers_from(value)


def test_an_issuer_without_keys_named_is_read_by_openid_discovery() -> None:
    (entry,) = issuers_from('[{"issuer": "https://a", "tenants": ["acme"], "leeway_seconds": 0}]')
    assert (entry.jwks, entry.jwks_url, entry.leeway_seconds) == (None, None, 0)


def test_an_issuer_without_usable_keys_stops_the_service_at_start() -> None:
    from agentledger.api import Authenticator

    empty = TrustedIssuer(issuer="https://a", jwks={"keys": []})
    with pytest.raises(ConfigError, match="JWKS is unusable"):
        Authenticator([empty], lambda _: None)


def test_workers_read_the_tenants_each_issuer_is_bound_to_from_the_same_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentledger.app.config import from_environment

    entries = [{"issuer": "https://a", "jwks_url": "u", "tenants": ["acme", "globex/eu"]}]
    monkeypatch.setenv("AGENTLEDGER_OIDC_ISSUERS", json.dumps(entries))
    assert from_environment().issuer_tenants == {"https://a": ("acme", "globex/eu")}
    monkeypatch.setenv("AGENTLEDGER_OIDC_ISSUERS", '[{"issuer": "https://a", "jwks_url": "u"}]')
    with pytest.raises(ConfigError, match="name the tenants it speaks for"):
        from_environment()
