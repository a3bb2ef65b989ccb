"""How clients and workers reach the Temporal frontend: TLS, mutual TLS, an API key, and the
payload codec that keeps customer data unreadable there (``AGENTLEDGER_TEMPORAL_*``,
``AGENTLEDGER_PAYLOAD_*``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from agentledger.app.errors import ConfigError

_OFF = ("off", "0", "false", "no")


@dataclass(frozen=True)
class TemporalSecurity:
    """How clients and workers prove themselves to a Temporal frontend that is not open to all:
    TLS (a private CA, mutual TLS with a client certificate) and/or an API key read from the
    named variable. Production should close the frontend: whoever reaches it can start runs and
    send updates. And what the frontend may read: payloads are sealed unless the codec is off."""

    tls: bool = False
    ca_cert: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    server_name: str | None = None
    api_key_env: str | None = None
    payload_codec: bool = True
    """Payloads sealed with the application's keys (``app.payloads``;
    ``AGENTLEDGER_PAYLOAD_CODEC=off``: clear text on the server)."""
    payload_keys: Path | None = None
    """The payload key ring (``AGENTLEDGER_PAYLOAD_KEYS``; ``None``: the data directory's)."""


def temporal_security(env: Mapping[str, str]) -> TemporalSecurity:
    def path(name: str) -> Path | None:
        raw = env.get(f"AGENTLEDGER_{name}")
        return Path(raw).expanduser() if raw else None

    security = TemporalSecurity(
        ca_cert=path("TEMPORAL_TLS_CA"),
        client_cert=path("TEMPORAL_TLS_CERT"),
        client_key=path("TEMPORAL_TLS_KEY"),
        server_name=env.get("AGENTLEDGER_TEMPORAL_TLS_SERVER_NAME") or None,
        api_key_env=env.get("AGENTLEDGER_TEMPORAL_API_KEY_ENV") or None,
        payload_codec=env.get("AGENTLEDGER_PAYLOAD_CODEC", "on").lower() not in _OFF,
        payload_keys=Path(keys).expanduser()
        if (keys := env.get("AGENTLEDGER_PAYLOAD_KEYS"))
        else None,
    )
    if (security.client_cert is None) != (security.client_key is None):
        raise ConfigError(
            "AGENTLEDGER_TEMPORAL_TLS_CERT and AGENTLEDGER_TEMPORAL_TLS_KEY go together (mTLS)"
        )
    wanted = env.get("AGENTLEDGER_TEMPORAL_TLS", "").lower() in ("1", "true", "yes")
    implied = any((security.ca_cert, security.client_cert, security.server_name))
    return replace(security, tls=wanted or implied or security.api_key_env is not None)
