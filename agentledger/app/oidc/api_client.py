"""Calls to ``agentledger serve`` with the caller's bearer token; the API's problem answers
(RFC 9457) become the CLI's typed errors: a refused token by its problem ``type``."""

from __future__ import annotations

from typing import Any

import httpx

from agentledger.app.errors import NotFound, Refused, ServerUnavailable
from agentledger.app.oidc.errors import token_refused

PROBLEM_BASE = "https://agentledger.dev/problems/"
TIMEOUT_SECONDS = 60.0


async def call(
    http: httpx.AsyncClient, api_url: str, token: str, method: str, path: str,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    try:
        response = await http.request(
            method,
            api_url + path,
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT_SECONDS,
        )
    except httpx.HTTPError as exc:
        raise ServerUnavailable(
            f"the API at {api_url} did not answer ({type(exc).__name__}: {exc}); check "
            "AGENTLEDGER_API_URL and that `agentledger serve` is up"
        ) from None
    if response.is_success:
        found = response.json()
        return found if isinstance(found, dict) else {"value": found}
    raise _problem(response)


def _problem(response: httpx.Response) -> Exception:
    try:
        body = response.json()
        slug = str(body.get("type", "")).removeprefix(PROBLEM_BASE)
        detail = str(body.get("detail", response.reason_phrase))
    except (ValueError, AttributeError):
        slug, detail = "", f"{response.status_code} {response.reason_phrase}"
    if response.status_code == 401:
        return token_refused(slug, detail)
    if response.status_code == 404:
        return NotFound(detail)
    if response.status_code >= 500:
        return ServerUnavailable(f"the API could not serve this ({slug}): {detail}")
    return Refused(f"the API refused ({slug}): {detail}", slug or None)
