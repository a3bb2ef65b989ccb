"""``/docs`` works with no network: the page, its Swagger UI assets (files of an installed
package, never a CDN) and its start-up script all come from the service itself, under the UI's
content security policy (no inline script)."""

from __future__ import annotations

import os
import re

import httpx
import pytest
from fastapi import FastAPI

from agentledger.api import docs
from tests.api.conftest import Http

URL = re.compile(r'(?:src|href)="([^"]+)"')


@pytest.fixture
def swagger_installed() -> None:
    """The package is a dependency: CI installs it; a checkout whose environment predates it is
    told to reinstall instead of failing here."""
    if docs.swagger_assets() is None:
        if os.environ.get("CI"):
            pytest.fail(f"{docs.PACKAGE} is missing: it is a dependency (pip install -e .)")
        pytest.skip(f"{docs.PACKAGE} is not installed here (pip install -e . installs it)")


async def test_the_api_docs_and_every_asset_they_load_come_from_the_service(
    swagger_installed: None, http: Http
) -> None:
    client = http("")
    page = await client.get("/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "http://" not in page.text and "https://" not in page.text
    assert "script-src" not in page.headers["content-security-policy"]  # only 'self' runs
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page.text) is None  # no inline script
    assets = URL.findall(page.text)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    assert any(a.endswith("swagger-ui.css") for a in assets)
    for asset in assets:
        assert asset.startswith("/"), asset
        loaded = await client.get(asset)
        assert loaded.status_code == 200 and loaded.content, asset
    started = next(a for a in assets if a.endswith("docs.js"))
    assert "/openapi.json" in (await client.get(started)).text
    assert (await client.get("/openapi.json")).status_code == 200


async def test_without_the_package_the_docs_page_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(docs, "swagger_assets", lambda: None)
    app = FastAPI(docs_url=None, redoc_url=None)
    docs.install_docs(app)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://api.test") as client:
        page = await client.get("/docs")
    assert page.status_code == 503
    assert docs.PACKAGE in page.text and 'href="/openapi.json"' in page.text
    assert "http://" not in page.text and "https://" not in page.text
