"""``AGENTLEDGER_OIDC_ISSUERS``: what ``serve`` trusts, and a clear error when it is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.api import API_AUDIENCE, TrustedIssuer, issuers_from
from agentledger.errors import ConfigError


def test_issuers_come_from_inline_json_or_a_file(tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": []}))
    entries = [
        {"issuer": "https://a", "jwks_url": "https://a/jwks", "roles_claim": "groups"},
        {"issuer": "https://b", "audience": "x", "jwks_file": str(jwks), "tenant_claim": "org"},
    ]
    inline = issuers_from(json.dumps(entries))
    listed = tmp_path / "issuers.json"
    listed.write_text(json.dumps(entries))
    assert issuers_from(str(listed)) == inline
    assert inline[0] == TrustedIssuer(
        issuer="https://a", audience=API_AUDIENCE, jwks_url="https://a/jwks", roles_claim="groups"
    )
    assert (inline[1].audience, inline[1].jwks, inline[1].tenant_claim) == (
        "x",
        {"keys": []},
        "org",
    )
    assert issuers_from("") == [] and issuers_from(None) == []


@pytest.mark.parametrize(
    "value",
    [
        '[{"issuer": "https://a"}]',
        '[{"issuer": "https://a", "jwks_url": "u", "jwks_file": "f"}]',
        '[{"jwks_url": "u"}]',
        "[not json",
        "/no/such/file.json",
    ],
)
def test_a_wrong_issuer_configuration_is_a_config_error(value: str) -> None:
    with pytest.raises(ConfigError, match="AGENTLEDGER_OIDC_ISSUERS"):
        issuers_from(value)


def test_an_issuer_without_usable_keys_stops_the_service_at_start() -> None:
    from agentledger.api import Authenticator

    empty = TrustedIssuer(issuer="https://a", jwks={"keys": []})
    with pytest.raises(ConfigError, match="JWKS is unusable"):
        Authenticator([empty], lambda _: None)
