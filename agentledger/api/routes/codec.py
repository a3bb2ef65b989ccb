"""The payload codec, served for the Temporal UI and ``temporal`` CLI (``temporal server
start-dev --ui-codec-endpoint <this service>/codec``): ``POST /codec/decode`` opens payloads
sealed with this deployment's keys, ``POST /codec/encode`` seals them (``app.payloads``), in
Temporal's codec-server JSON (``{"payloads": [{"metadata": {...}, "data": "..."}]}``).

Only an auditor may use it, with a bearer token like every change: a payload can hold any
tenant's customer data and does not say whose. Each use is in the service's log, never the
payloads.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import Response
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from agentledger.api.deps import AUDITOR_ROLE, Ctx, Who, require_role
from agentledger.api.problems import PROBLEM_RESPONSES, ApiProblem
from agentledger.app.payloads import PayloadKeyMissing

router = APIRouter(prefix="/codec", tags=["codec"], responses=PROBLEM_RESPONSES)
log = logging.getLogger(__name__)


@router.post("/decode", summary="Open sealed payloads (role auditor)")
async def decode(request: Request, ctx: Ctx, caller: Who) -> Response:
    return await _apply(request, ctx, caller, "decode")


@router.post("/encode", summary="Seal payloads with the active key (role auditor)")
async def encode(request: Request, ctx: Ctx, caller: Who) -> Response:
    return await _apply(request, ctx, caller, "encode")


async def _apply(request: Request, ctx: Ctx, caller: Who, way: str) -> Response:
    require_role(ctx, caller, AUDITOR_ROLE, f"{way}_payloads", "codec")
    try:
        payloads = json_format.Parse(await request.body(), Payloads())
    except json_format.ParseError as exc:
        raise ApiProblem(400, "invalid-payloads", f"not codec-server JSON: {exc}") from None
    codec = ctx.client.data_converter.payload_codec
    found = list(payloads.payloads)
    try:
        if codec is not None:
            found = await (codec.decode(found) if way == "decode" else codec.encode(found))
    except PayloadKeyMissing as exc:
        raise ApiProblem(422, "payload-key-missing", str(exc)) from None
    log.info("%s %s %d payloads", caller.principal.user_id, way, len(found))
    body = json_format.MessageToJson(Payloads(payloads=found))
    return Response(body, media_type="application/json")
