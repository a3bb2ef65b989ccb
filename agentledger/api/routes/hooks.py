"""``POST /hooks/{pack}/{source}``: a signed webhook delivery starts one run (``api.hooks``).

Answers: ``202`` with the run id when this delivery started it, ``200`` with the same run id
and ``duplicate: true`` for a redelivery (a sender's retry stops at a 2xx), else problem+json:
``401`` missing-signature, invalid-signature, stale-delivery; ``400`` missing-delivery-id,
malformed-json; ``404`` unknown-source; ``422`` payload-rejected, requester-refused,
work-order-refused; ``503`` unavailable. Every answer is counted by outcome.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from agentledger.api.deps import context
from agentledger.api.hooks import WebhookDoor, believed, deliver
from agentledger.api.problems import PROBLEM_RESPONSES, ApiProblem

router = APIRouter(tags=["webhooks"], responses=PROBLEM_RESPONSES)
Name = Annotated[str, Path(min_length=1, max_length=100)]


@router.post(
    "/hooks/{pack}/{source}",
    status_code=202,
    summary="A signed webhook delivery: start its one run (a redelivery starts none)",
    responses={200: {"description": "a redelivery: the run its first delivery started"}},
)
async def receive(request: Request, pack: Name, source: Name) -> JSONResponse:
    door: WebhookDoor | None = getattr(request.app.state, "webhooks", None)
    if door is None:
        raise ApiProblem(404, "unknown-source", "no webhook sources are configured")
    known = (pack, source) in door.sources
    labels = (pack, source) if known else ("-", "-")  # a sender's path is no metric label
    try:
        found = believed(door, pack, source, request.headers, body := await request.body())
        delivered = await deliver(
            context(request), door, found, request.headers["x-agentledger-delivery"], body
        )
    except ApiProblem as problem:
        door.metrics.count(*labels, problem.slug)
        raise
    door.metrics.count(*labels, "duplicate" if delivered.duplicate else "started")
    return JSONResponse(
        {"run_id": delivered.run_id, "duplicate": delivered.duplicate},
        status_code=200 if delivered.duplicate else 202,
    )
