"""The shipped production configuration for ``serve`` says only what the code reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from agentledger.api import issuers_from

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "infra" / "serve"


def _read_by_the_code() -> set[str]:
    source = "\n".join(p.read_text() for p in (ROOT / "agentledger").rglob("*.py"))
    return set(re.findall(r"AGENTLEDGER_[A-Z_]+[A-Z]", source))


def test_every_variable_of_the_example_environment_is_one_the_code_reads() -> None:
    names = re.findall(r"^(AGENTLEDGER_[A-Z_]+)=", (SERVE / "serve.env.example").read_text(), re.M)
    assert "AGENTLEDGER_TEMPORAL_TLS_CERT" in names and "AGENTLEDGER_OIDC_ISSUERS" in names
    # AGENTLEDGER_TEMPORAL_TLS_CA is read as "AGENTLEDGER_TEMPORAL_" + name
    known = _read_by_the_code() | {"AGENTLEDGER_TEMPORAL_TLS_CA"}
    assert set(names) <= known, set(names) - known


def test_the_oidc_example_is_what_serve_accepts() -> None:
    (issuer,) = issuers_from(str(SERVE / "oidc-issuers.example.json"))
    assert issuer.jwks_url and issuer.tenant_claim == "org" and issuer.tenants == ("acme",)
    assert (
        json.loads((SERVE / "oidc-issuers.example.json").read_text())[0]["issuer"] == issuer.issuer
    )


def test_the_temporal_fragment_requires_client_certificates_and_authorizes_by_namespace() -> None:
    config = yaml.safe_load((SERVE / "temporal-frontend.yaml").read_text())["global"]
    assert config["tls"]["frontend"]["server"]["requireClientAuth"] is True
    assert config["authorization"]["authorizer"] == "default"
    assert config["authorization"]["permissionsClaimName"] == "permissions"
