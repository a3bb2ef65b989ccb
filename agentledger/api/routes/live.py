"""Server-sent events: a run's page learns that the run moved without asking over and over.

The server polls the ledger's read model (one indexed row) on the client's behalf and sends an
event only when the run's last sequence number changes. Each stream is bounded in time; the
browser's ``EventSource`` reconnects by itself, so a stream never pins a worker forever.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.responses import StreamingResponse

from agentledger.api.deps import Ctx, Who, visible_run
from agentledger.api.problems import PROBLEM_RESPONSES
from agentledger.api.routes.runs import Id
from agentledger.domain.state import ENDED

router = APIRouter(prefix="/api", tags=["runs"], responses=PROBLEM_RESPONSES)
POLL_SECONDS = 0.5
STREAM_SECONDS = 120.0
_ENDED = ENDED


@router.get(
    "/runs/{run_id}/stream",
    summary="Server-sent events: `moved` each time the run's ledger row changes",
    response_class=StreamingResponse,
)
async def stream(ctx: Ctx, caller: Who, run_id: Id, request: Request) -> StreamingResponse:
    visible_run(ctx, caller, run_id)
    return StreamingResponse(_moves(ctx, run_id, request), media_type="text/event-stream")


async def _moves(ctx: Ctx, run_id: str, request: Request) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    deadline, seen = loop.time() + STREAM_SECONDS, -1
    yield "retry: 2000\n\n"
    while loop.time() < deadline and not await request.is_disconnected():
        row = await asyncio.to_thread(ctx.ledger.get_run, run_id)
        if row is not None and row.last_seq != seen:
            seen = row.last_seq
            data = {"run_id": run_id, "status": row.status, "last_seq": row.last_seq}
            yield f"event: moved\ndata: {json.dumps(data)}\n\n"
            if row.status in _ENDED:
                return
        await asyncio.sleep(POLL_SECONDS)
