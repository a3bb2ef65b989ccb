"""``agentledger serve``: the API and UI on uvicorn, over the configured ledger and Temporal.

Trusted issuers: the embedded stack's local issuer (its key in the data directory, the one
``agentledger token issue`` signs with) and every external OIDC issuer named in
``AGENTLEDGER_OIDC_ISSUERS``.
"""

from __future__ import annotations

import argparse
import importlib
import os

import uvicorn

from agentledger.api.app import create_app
from agentledger.api.auth import ISSUERS_VARIABLE, TrustedIssuer, issuers_from
from agentledger.commands import start_server
from agentledger.config import Settings
from agentledger.reading import open_ledger
from agentledger.registry import register_env_packs
from agentledger.temporal_client import connect

say = print


def local_issuer(settings: Settings) -> TrustedIssuer | None:
    """The data directory's issuer, whose subjects are looked up in the directory.

    Looked up by name: the identity module signs the tokens and owns the key; this process only
    needs its public half."""
    try:
        identity = importlib.import_module("agentledger.identity")
    except ImportError:
        return None
    issuer = identity.Issuer.local(settings.data_dir)
    return TrustedIssuer(
        issuer=issuer.name,
        audience=identity.API_AUDIENCE,
        jwks=issuer.public_jwks(),
        directory=True,
    )


def trusted_issuers(settings: Settings) -> list[TrustedIssuer]:
    local = local_issuer(settings)
    return [*([local] if local else []), *issuers_from(os.environ.get(ISSUERS_VARIABLE))]


async def serve(settings: Settings, args: argparse.Namespace) -> int:
    register_env_packs(settings.extra_packs)
    ledger = open_ledger(settings)
    start_server(settings)  # the embedded one, reused if `dev` already started it
    client = await connect(settings)
    issuers = trusted_issuers(settings)
    app = create_app(ledger, client, settings.task_queue, issuers)
    say(
        f"· serving http://{args.host}:{args.port}/ (UI: /ui/approvals, OpenAPI: /docs); "
        f"trusting {', '.join(i.issuer for i in issuers) or 'no issuer (configure one)'}"
    )
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="info")
    await uvicorn.Server(config).serve()
    return 0
