"""``agentledger login | logout | whoami``, and ``run``, ``approve`` and ``reply`` through the API.

Where ``AGENTLEDGER_API_URL`` is set, those three commands send the request to that API with a
token from the identity provider; the API verifies it and signs the decision or reply with the
service's key on the caller's behalf (the run records the caller's issuer and token id). Where
it is not, they are the embedded single-user default's own commands (``agentledger.cli.runs``):
signed with the data directory's local issuer, as whoever ``--as`` names.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

import httpx

from agentledger.app.config import Settings
from agentledger.app.edits import batch_of, typed_edits
from agentledger.app.errors import ConfigError, Refused
from agentledger.app.oidc import api_client
from agentledger.app.oidc.cache import Token, TokenCache
from agentledger.app.oidc.flows import DeviceCode
from agentledger.app.oidc.session import current_token, sign_in
from agentledger.app.oidc.settings import (
    ISSUER_VARIABLE,
    ProviderSettings,
    api_url,
    provider_settings,
)

LOCAL_NOTE = (
    "no identity provider is configured ({variable}): this is the embedded single-user default, "
    "whose commands sign with the data directory's local issuer (`--as NAME`); no sign-in needed"
)


def _provider() -> ProviderSettings:
    provider = provider_settings()
    if provider is None:
        raise ConfigError(LOCAL_NOTE.format(variable=ISSUER_VARIABLE))
    return provider


def _show(code: DeviceCode) -> None:
    where = code.verification_uri_complete or code.verification_uri
    print(f"To sign in, open {where} and confirm the code {code.user_code}", flush=True)
    print(f"(the code expires in {code.expires_in // 60 or 1} min; waiting...)", flush=True)


def _signed_in(provider: ProviderSettings, token: Token, cache: TokenCache) -> str:
    until = datetime.fromtimestamp(token.expires_at, UTC).isoformat(timespec="seconds")
    how = "client credentials" if provider.is_service else "device sign-in"
    return (
        f"signed in as {token.subject} at {provider.issuer} ({how}); the token is cached in "
        f"{cache.path} until {until}"
    )


async def login(settings: Settings, args: argparse.Namespace) -> int:
    provider = _provider()
    cache = TokenCache(settings.data_dir)
    async with httpx.AsyncClient() as http:
        token = await sign_in(provider, cache, http, show=_show)
    print(_signed_in(provider, token, cache))
    return 0


async def logout(settings: Settings, args: argparse.Namespace) -> int:
    provider = _provider()
    cache = TokenCache(settings.data_dir)
    gone = cache.forget(provider.cache_key)
    print(f"signed out of {provider.issuer}" if gone else f"not signed in to {provider.issuer}")
    return 0


async def whoami(settings: Settings, args: argparse.Namespace) -> int:
    """Who the API says the cached token proves (its directory entry)."""
    me = await _through_api(settings, "GET", "/api/me")
    roles = ",".join(me.get("roles", [])) or "-"
    print(f"{me['user_id']} tenant={me['tenant_id']} roles={roles} issuer={me['issuer']}")
    return 0


async def run(settings: Settings, args: argparse.Namespace) -> int:
    if api_url() is None:
        from agentledger.cli.runs import run as local

        _need(args.user, "--user USER", "the run's requester")
        return int(await local(settings, args))
    _refuse_local_flags(args, user=args.user, wait=args.wait or args.follow, model=args.model)
    started = await _through_api(
        settings, "POST", "/api/runs", {"pack": args.pack, "request": args.request}
    )
    print(started["run_id"])
    return 0


async def approve(settings: Settings, args: argparse.Namespace) -> int:
    if api_url() is None:
        from agentledger.cli.runs import approve as local

        _need(args.principal, "--as PRINCIPAL", "who decides")
        return int(await local(settings, args))
    _refuse_local_flags(args, user=args.principal)
    if args.more:
        return await _approve_many(settings, args)
    body: dict[str, Any] = {"approve": not args.reject, "reason": args.reason}
    if args.content is not None:
        body["content"] = args.content
    if args.edits:
        body["edits"] = await _edits_through_api(settings, args)
    path = f"/api/runs/{args.run_id}/approvals/{args.approval_id}/decision"
    decided = await _through_api(settings, "POST", path, body)
    print(f"{decided['approval_id']} {decided['decision']} by {decided['by']}")
    return 0


async def _approve_many(settings: Settings, args: argparse.Namespace) -> int:
    """One batch request; the API answers for each decision on its own."""
    decision = {"approve": not args.reject, "reason": args.reason}
    items = [{"run_id": r, "approval_id": a, **decision} for r, a in batch_of(args)]
    answer = await _through_api(settings, "POST", "/api/approvals/decisions", {"decisions": items})
    for item in answer["results"]:
        where = f"{item['run_id']} {item['approval_id']}"
        if item["ok"]:
            print(f"{where} {item['decision']} by {item['by']}")
        else:
            print(f"{where}: refused ({item.get('reason_code') or item['title']}): "
                  f"{item['detail']}", file=sys.stderr)  # fmt: skip
    return 0 if all(item["ok"] for item in answer["results"]) else Refused.exit_code


async def _edits_through_api(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """``--set`` typed after the call the API shows for the approval."""
    shown = await _through_api(settings, "GET", f"/api/runs/{args.run_id}/approvals", None)
    rows = [a for a in shown["approvals"] if a["approval_id"] == args.approval_id]
    return typed_edits(args.edits, rows[0]["arguments"] if rows else {})


async def reply(settings: Settings, args: argparse.Namespace) -> int:
    if api_url() is None:
        from agentledger.cli.runs import reply as local

        _need(args.principal, "--as PRINCIPAL", "the run's requester")
        return int(await local(settings, args))
    _refuse_local_flags(args, user=args.principal, wait=args.wait or args.follow)
    await _through_api(settings, "POST", f"/api/runs/{args.run_id}/replies", {"text": args.text})
    print(f"reply sent to {args.run_id}")
    return 0


async def cancel(settings: Settings, args: argparse.Namespace) -> int:
    if api_url() is None:
        from agentledger.cli.runs import cancel as local

        _need(args.principal, "--as PRINCIPAL", "who cancels")
        return int(await local(settings, args))
    _refuse_local_flags(args, user=args.principal)
    path = f"/api/runs/{args.run_id}/cancel"
    ended = await _through_api(settings, "POST", path, {"reason": args.reason})
    if ended["status"] != "cancelled":  # a call in flight ended the run first: as local says
        print(f"{args.run_id} ended {ended['status']} before the cancel took effect")
        return Refused.exit_code
    print(f"{args.run_id} cancelled by {ended['by']}")
    return 0


async def steer(settings: Settings, args: argparse.Namespace) -> int:
    if api_url() is None:
        from agentledger.cli.runs import steer as local

        _need(args.principal, "--as PRINCIPAL", "who steers")
        return int(await local(settings, args))
    _refuse_local_flags(args, user=args.principal)
    path = f"/api/runs/{args.run_id}/steer"
    taken = await _through_api(settings, "POST", path, {"text": args.text})
    print(f"{args.run_id} instructed by {taken['by']} (event #{taken['seq']})")
    return 0


async def fork(settings: Settings, args: argparse.Namespace) -> int:
    if api_url() is None:
        from agentledger.cli.runs import fork as local

        _need(args.principal, "--as PRINCIPAL", "who forks")
        return int(await local(settings, args))
    _refuse_local_flags(args, user=args.principal, wait=args.wait or args.follow)
    body = {"at": args.at, "dry": args.dry, "model": args.model, "profile": args.profile}
    started = await _through_api(settings, "POST", f"/api/runs/{args.run_id}/fork", body)
    print(started["run_id"])
    print(f"· forked from {args.run_id} at #{args.at} by {started['by']}")
    return 0


async def _through_api(
    settings: Settings, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    url = api_url()
    if url is None:
        raise ConfigError("set AGENTLEDGER_API_URL to the API (`agentledger serve`) to ask it")
    provider = provider_settings()
    if provider is None:
        raise ConfigError(
            f"AGENTLEDGER_API_URL is set, but no identity provider ({ISSUER_VARIABLE}) to get "
            "a token from: set it, or unset AGENTLEDGER_API_URL for the embedded default"
        )
    async with httpx.AsyncClient() as http:
        token = await current_token(provider, TokenCache(settings.data_dir), http)
        return await api_client.call(http, url, token.access_token, method, path, body)


def _need(value: str | None, flag: str, what: str) -> None:
    if value is None:
        raise ConfigError(
            f"{flag} is required ({what}): the embedded default signs with this data directory's "
            "local issuer; with AGENTLEDGER_API_URL your identity provider's token says who"
        )


def _refuse_local_flags(
    args: argparse.Namespace, *, user: str | None, wait: bool = False, model: str | None = None
) -> None:
    """Through the API the token says who acts, and the API starts runs its own way."""
    if user is not None:
        raise ConfigError(
            "--as/--user name a principal of the local issuer; through AGENTLEDGER_API_URL "
            "your token says who you are (`agentledger whoami`)"
        )
    if wait or model is not None:
        raise ConfigError(
            "--wait, --follow and --model are not available through AGENTLEDGER_API_URL "
            "(follow a run's answer there with GET /api/runs/{id}/stream)"
        )
