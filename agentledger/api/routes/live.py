"""Server-sent events: a run's page learns that the run moved, and reads its answer as it is
written, without asking over and over.

The server polls the ledger on the client's behalf: the run's read-model row (``moved``, sent
only when the run's last sequence number changes, with the recorded answer once it ended) and
its answer stream (``token``: new text at its offset; ``reset``: what was shown is void, see
``app.answer_stream``). Each ``token`` carries an id (``stream:offset``); a client that
reconnects with it as ``Last-Event-ID`` resumes where it was. Each response is bounded in time;
the browser's ``EventSource`` reconnects by itself, so a stream never pins a worker forever.
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
from agentledger.app.answer_stream import AnswerFollower, Said
from agentledger.domain.state import ENDED

router = APIRouter(prefix="/api", tags=["runs"], responses=PROBLEM_RESPONSES)
POLL_SECONDS = 0.5
TOKEN_POLL_SECONDS = 0.1
STREAM_SECONDS = 120.0
_ENDED = ENDED


@router.get(
    "/runs/{run_id}/stream",
    summary="Server-sent events: `moved` when the run's ledger row changes; `token` and "
    "`reset` while its answer is written (resumable with `Last-Event-ID`)",
    response_class=StreamingResponse,
)
async def stream(ctx: Ctx, caller: Who, run_id: Id, request: Request) -> StreamingResponse:
    visible_run(ctx, caller, run_id)
    follower = AnswerFollower(ctx.ledger, run_id, request.headers.get("last-event-id"))
    events = _events(ctx, run_id, request, follower)
    return StreamingResponse(events, media_type="text/event-stream")


async def _events(
    ctx: Ctx, run_id: str, request: Request, follower: AnswerFollower
) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    deadline, seen, next_row = loop.time() + STREAM_SECONDS, -1, 0.0
    yield "retry: 2000\n\n"
    while loop.time() < deadline and not await request.is_disconnected():
        for said in await asyncio.to_thread(follower.poll):
            yield _said(said)
        if loop.time() >= next_row:
            next_row = loop.time() + POLL_SECONDS
            row = await asyncio.to_thread(ctx.ledger.get_run, run_id)
            if row is not None and row.last_seq != seen:
                seen = row.last_seq
                data = {"run_id": run_id, "status": row.status, "last_seq": row.last_seq}
                if row.status in _ENDED:
                    yield _event("moved", {**data, "answer": row.answer})
                    return
                yield _event("moved", data)
        await asyncio.sleep(TOKEN_POLL_SECONDS)


def _said(said: Said) -> str:
    if said.kind == "reset":
        return _event("reset", {"stream": said.stream, "reason": said.reason})
    data = {"stream": said.stream, "offset": said.offset, "text": said.text, "status": said.status}
    return f"id: {said.event_id}\n" + _event("token", data)


def _event(name: str, data: dict[str, object]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"
