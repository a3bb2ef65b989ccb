"""Without an identity provider the CLI is the embedded single-user default, and says so: its
commands sign with the data directory's local issuer, as whoever ``--as`` names."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentledger.app.oidc.settings import ISSUER_VARIABLE, provider_settings
from agentledger.cli.main import main


@pytest.fixture(autouse=True)
def embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AGENTLEDGER_API_URL", ISSUER_VARIABLE, "AGENTLEDGER_OIDC_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENTLEDGER_DATA_DIR", str(tmp_path))


def test_login_without_a_provider_says_this_is_the_local_issuers_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["login"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agentledger: no identity provider is configured ({ISSUER_VARIABLE})")
    assert "embedded single-user default" in err and "local issuer" in err


def test_the_embedded_default_still_needs_who_signs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approve", "run-1", "appr-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentledger: --as PRINCIPAL is required (who decides)")
    assert main(["run", "support", "hello"]) == 2
    assert capsys.readouterr().err.startswith("agentledger: --user USER is required")


def test_an_api_without_an_identity_provider_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTLEDGER_API_URL", "http://127.0.0.1:9")
    assert main(["approve", "run-1", "appr-1"]) == 2
    assert capsys.readouterr().err.startswith(
        f"agentledger: AGENTLEDGER_API_URL is set, but no identity provider ({ISSUER_VARIABLE})"
    )


def test_help_tells_the_local_issuer_from_the_identity_provider(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["approve", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "local issuer" in said and "identity provider's token says who decides" in said


def test_a_provider_is_configured_by_url_and_a_service_by_its_secret(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    person = provider_settings({ISSUER_VARIABLE: "https://login.example.com"})
    assert person is not None and not person.is_service
    assert person.scope == "openid offline_access"
    svc = provider_settings(
        {ISSUER_VARIABLE: "https://login.example.com", "AGENTLEDGER_OIDC_CLIENT_ID": "svc",
         "AGENTLEDGER_OIDC_CLIENT_SECRET_FILE": str(secret)}
    )  # fmt: skip
    assert svc is not None and svc.is_service and svc.client_secret == "s3cret"
    assert provider_settings({}) is None
