"""Connecting to a closed Temporal frontend: TLS with a private CA, mutual TLS, an API key."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentledger.app.config import temporal_security
from agentledger.app.errors import ConfigError
from agentledger.app.temporal import connection_security


def test_an_open_dev_server_needs_nothing() -> None:
    assert connection_security(temporal_security({})) == {}


def test_mutual_tls_reads_the_ca_and_the_client_pair(tmp_path: Path) -> None:
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_bytes(name.encode())
    env = {
        "AGENTLEDGER_TEMPORAL_TLS_CA": str(tmp_path / "ca.pem"),
        "AGENTLEDGER_TEMPORAL_TLS_CERT": str(tmp_path / "client.pem"),
        "AGENTLEDGER_TEMPORAL_TLS_KEY": str(tmp_path / "client.key"),
        "AGENTLEDGER_TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
    }
    tls = connection_security(temporal_security(env))["tls"]
    assert tls.server_root_ca_cert == b"ca.pem"
    assert (tls.client_cert, tls.client_private_key) == (b"client.pem", b"client.key")
    assert tls.domain == "temporal.internal"


def test_an_api_key_is_read_from_the_named_variable_and_implies_tls() -> None:
    security = temporal_security({"AGENTLEDGER_TEMPORAL_API_KEY_ENV": "TEMPORAL_KEY"})
    options = connection_security(security, {"TEMPORAL_KEY": "k-123"})
    assert options["api_key"] == "k-123"
    assert options["tls"].client_cert is None


@pytest.mark.parametrize(
    ("env", "environ", "problem"),
    [
        ({"AGENTLEDGER_TEMPORAL_TLS_CERT": "/x.pem"}, {}, "go together"),
        ({"AGENTLEDGER_TEMPORAL_API_KEY_ENV": "TEMPORAL_KEY"}, {}, "unset"),
        ({"AGENTLEDGER_TEMPORAL_TLS_CA": "/no/such/ca.pem"}, {}, "cannot read"),
    ],
)
def test_incomplete_security_settings_are_one_clear_error(
    env: dict[str, str], environ: dict[str, str], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        connection_security(temporal_security(env), environ)
