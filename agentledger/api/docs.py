"""``/docs``: Swagger UI over the service's own OpenAPI document, with no network.

FastAPI's own page loads Swagger UI from a CDN and starts it with an inline script, which an
offline machine cannot fetch and the pages' content security policy (``api.limits``) would not
run anyway. Here the assets are the files the ``fastapi-offline`` package ships (Swagger UI 5,
which reads OpenAPI 3.1), served from this origin, and the start-up script is ``static/docs.js``.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"
PACKAGE = "fastapi-offline"

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentledger API</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="icon" type="image/png" href="{assets}/favicon.png">
<script src="{assets}/swagger-ui-bundle.js" defer></script>
<script src="/static/docs.js" defer></script>
</head>
<body><main id="swagger-ui"><p>Loading the API's OpenAPI document
(<a href="/openapi.json">/openapi.json</a>)…</p></main></body>
</html>
"""

_MISSING = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentledger API</title></head>
<body><main><h1>agentledger API</h1>
<p>The browsable documentation needs the <code>{package}</code> package, a dependency of
agentledger that is not installed here: <code>pip install -e .</code> again installs it.</p>
<p>The OpenAPI document itself is at <a href="/openapi.json">/openapi.json</a>.</p>
</main></body></html>
"""


def swagger_assets() -> Path | None:
    """The directory of Swagger UI's files in the installed package, if it is installed."""
    spec = find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "static"


def install_docs(app: FastAPI) -> None:
    """``/docs`` and its assets (the app is created with ``docs_url=None``)."""
    assets = swagger_assets()
    if assets is not None:
        app.mount(ASSETS, StaticFiles(directory=assets), name="docs-assets")
    page = _PAGE.format(assets=ASSETS) if assets else _MISSING.format(package=PACKAGE)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(page, status_code=200 if assets else 503)
