"""The HTTP API and web UI (``agentledger serve``): authenticated, authorised, read from the
ledger, written through Temporal. ``create_app`` builds the ASGI application."""

from agentledger.api.auth import Authenticator, Caller, TrustedIssuer, issuers_from
from agentledger.api.main import create_app
from agentledger.api.problems import PROBLEM_BASE, ApiProblem
from agentledger.app.identity import API_AUDIENCE

__all__ = [
    "API_AUDIENCE",
    "PROBLEM_BASE",
    "ApiProblem",
    "Authenticator",
    "Caller",
    "TrustedIssuer",
    "create_app",
    "issuers_from",
]
