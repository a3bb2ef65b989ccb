"""``agentledger token``: tokens and keys of this process's issuer (``app.identity``)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta

from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError
from agentledger.app.identity import issuer_for
from agentledger.app.stack import open_ledger, principal_of
from agentledger.cli._common import say

MAX_TOKEN_MINUTES = 24 * 60
LOCAL_ISSUER_NOTE = (
    "signed by the local issuer {name!r} (this data directory's key): the embedded single-user "
    "default. With an identity provider (AGENTLEDGER_OIDC_ISSUER), use `agentledger login`."
)


async def token(settings: Settings, args: argparse.Namespace) -> int:
    issuer = issuer_for(settings)
    if args.token_command == "jwks":
        # What workers elsewhere pin (AGENTLEDGER_TRUSTED_KEYS): public keys only.
        say(json.dumps(issuer.public_jwks(), indent=2))
        return 0
    if not 1 <= args.minutes <= MAX_TOKEN_MINUTES:  # refused: a clamped token is not what was asked
        raise ConfigError(
            f"--minutes {args.minutes}: a token lives 1 to {MAX_TOKEN_MINUTES} minutes"
        )
    # Only someone the directory knows gets a token; who they are is looked up again at use.
    subject = principal_of(open_ledger(settings), args.principal).user_id
    say(issuer.token(subject, audience=args.audience, ttl=timedelta(minutes=args.minutes)))
    # Said on stderr, so `TOKEN=$(agentledger token issue ...)` still captures the token alone.
    print(LOCAL_ISSUER_NOTE.format(name=issuer.name), file=sys.stderr)
    return 0
