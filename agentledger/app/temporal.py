"""Connecting to Temporal: the one client every command, worker and test uses."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.client import Client, Interceptor
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from agentledger.app.config import Settings, TemporalSecurity
from agentledger.app.errors import ConfigError, ServerUnavailable
from agentledger.app.payload_converter import data_converter
from agentledger.app.temporal_tls import connection_refusal


def connection_security(
    security: TemporalSecurity, environ: Mapping[str, str] = os.environ
) -> dict[str, Any]:
    """``Client.connect`` arguments for a frontend behind TLS, mTLS and/or an API key."""

    def read(path: Path | None) -> bytes | None:
        if path is None:
            return None
        try:
            return path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read Temporal TLS file {path}: {exc.strerror}") from None

    options: dict[str, Any] = {}
    if security.api_key_env is not None:
        key = environ.get(security.api_key_env)
        if not key:
            raise ConfigError(
                f"AGENTLEDGER_TEMPORAL_API_KEY_ENV names {security.api_key_env}, which is unset"
            )
        options["api_key"] = key
    if security.tls:
        options["tls"] = TLSConfig(
            server_root_ca_cert=read(security.ca_cert),
            client_cert=read(security.client_cert),
            client_private_key=read(security.client_key),
            domain=security.server_name,
        )
    return options


async def connect(
    settings: Settings,
    attempts: int = 20,
    *,
    runtime: Runtime | None = None,
    interceptors: Sequence[Interceptor] = (),
) -> Client:
    """Connect with the pydantic converter and the payload codec (``app.payloads``); retry
    briefly while a fresh server finishes booting.

    The embedded server is the data directory's own, on the ports it remembers; a port another
    data directory's server holds is refused (``agentledger.app.own_server``).

    ``runtime``: a Temporal runtime with telemetry (``observability.metrics.temporal_runtime``),
    which the workers built on this client share; ``None``: the SDK's default runtime.
    """
    from agentledger.app.own_server import own_settings  # not at import: it reads the devserver

    settings = own_settings(settings)
    last: Exception | None = None
    for _ in range(attempts):
        try:
            return await Client.connect(
                settings.address,
                namespace=settings.namespace,
                data_converter=data_converter(settings),
                runtime=runtime,
                interceptors=interceptors,
                **connection_security(settings.temporal_security),
            )
        except RuntimeError as exc:  # the SDK reports connection failures as RuntimeError
            refusal = connection_refusal(str(exc), settings.address, settings.temporal_security)
            if refusal is not None:
                raise refusal from None
            last = exc
            await asyncio.sleep(0.25)
    raise ServerUnavailable(
        f"cannot reach Temporal at {settings.address} ({last}). Start it with "
        "`agentledger dev`, or set AGENTLEDGER_TEMPORAL_ADDRESS."
    )
