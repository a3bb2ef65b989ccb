"""The local issuer and the keys a worker pins: one key per data directory, readable by its
owner only, and a configured JWKS trusted instead when there is one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError
from agentledger.app.identity import Issuer, trusted_keys
from agentledger.app.jwks import jwks


def test_the_local_issuer_keeps_one_key_per_data_directory(tmp_path: Path) -> None:
    first, again = Issuer.local(tmp_path), Issuer.local(tmp_path)
    assert first.kid == again.kid and first.public_x == again.public_x
    assert (tmp_path / "identity" / "issuer.pem").stat().st_mode & 0o077 == 0
    assert Issuer.local(tmp_path / "other").kid != first.kid


def test_a_worker_pins_its_own_issuer_unless_a_jwks_is_configured(tmp_path: Path) -> None:
    own = Issuer.local(tmp_path)
    assert trusted_keys(Settings(data_dir=tmp_path)) == (own.trusted_key(),)

    service = Issuer.local(tmp_path / "service", name="https://approvals.example")
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(jwks([service.trusted_key()])))
    pinned = trusted_keys(Settings(data_dir=tmp_path, trusted_keys_file=path))
    assert pinned == (service.trusted_key(),)
    assert pinned[0].issuer == "https://approvals.example"


@pytest.mark.parametrize(
    "document",
    ['{"keys": []}', '{"keys": [{"kty": "RSA", "n": "x"}]}', '{"keys": [{"kty": "OKP", '
     '"crv": "Ed25519", "x": "abc"}]}', "not json"],
)  # fmt: skip
def test_a_jwks_that_pins_nothing_usable_is_a_configuration_error(
    tmp_path: Path, document: str
) -> None:
    path = tmp_path / "keys.json"
    path.write_text(document)
    with pytest.raises(ConfigError, match="AGENTLEDGER_TRUSTED_KEYS"):
        trusted_keys(Settings(data_dir=tmp_path, trusted_keys_file=path))


def test_a_configured_issuer_key_is_never_created(tmp_path: Path) -> None:
    from agentledger.app.identity import issuer_for

    with pytest.raises(ConfigError, match="cannot read the issuer key"):
        issuer_for(Settings(data_dir=tmp_path, issuer_key=tmp_path / "missing.pem"))
    assert not (tmp_path / "missing.pem").exists()
