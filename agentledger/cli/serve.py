"""``agentledger serve``: the API and UI on uvicorn, over the configured ledger and Temporal.

Trusted issuers: the embedded stack's local issuer (its key in the data directory, the one
``agentledger token issue`` signs with) and every external OIDC issuer named in
``AGENTLEDGER_OIDC_ISSUERS``.
"""

from __future__ import annotations

import argparse
import os

import uvicorn

from agentledger.api.auth import TrustedIssuer, issuers_from
from agentledger.api.hooks import webhook_door
from agentledger.api.main import create_app
from agentledger.app.config import ISSUERS_VARIABLE, Settings
from agentledger.app.erasure_register import register_path
from agentledger.app.identity import API_AUDIENCE, Issuer, issuer_for
from agentledger.app.registry import register_env_packs
from agentledger.app.stack import open_ledger
from agentledger.app.temporal import connect
from agentledger.cli._common import say, start_server


def local_issuer(issuer: Issuer) -> TrustedIssuer:
    """This process's own issuer (``agentledger token issue`` signs with it): its subjects are
    looked up in the directory."""
    return TrustedIssuer(
        issuer=issuer.name, audience=API_AUDIENCE, jwks=issuer.public_jwks(), directory=True
    )


def trusted_issuers(issuer: Issuer) -> list[TrustedIssuer]:
    return [local_issuer(issuer), *issuers_from(os.environ.get(ISSUERS_VARIABLE))]


def public_url(args: argparse.Namespace) -> str:
    """Where clients reach this service (``AGENTLEDGER_PUBLIC_URL`` behind a proxy or TLS): the
    MCP door's resource identifier and the host name it admits, and the A2A agent cards'
    URLs."""
    return os.environ.get("AGENTLEDGER_PUBLIC_URL") or f"http://{args.host}:{args.port}"


async def serve(settings: Settings, args: argparse.Namespace) -> int:
    register_env_packs(settings.extra_packs)
    ledger = open_ledger(settings)
    settings = start_server(settings)  # the embedded one, reused if `dev` already started it
    client = await connect(settings)
    signer = issuer_for(settings)
    issuers = trusted_issuers(signer)
    app = create_app(
        ledger, client, settings.task_queue, issuers, signer=signer,
        webhooks=webhook_door(ledger), public_url=public_url(args),
        erasure_register=register_path(settings),
    )  # fmt: skip
    say(
        f"· serving http://{args.host}:{args.port}/ (UI: /ui/approvals, OpenAPI: /docs, MCP: "
        "/mcp/, A2A: /a2a/<pack>); "
        f"trusting {', '.join(i.issuer for i in issuers)}"
    )
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="info")
    await uvicorn.Server(config).serve()
    return 0
