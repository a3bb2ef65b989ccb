"""A run's log never shows a hole, even while an earlier append waits for its worker.

The model worker is down (crashed, or not yet started) while the run's first model call waits on
its queue, carrying the events recorded before it. A reply refused meanwhile is recorded and
flushed by the workflow's own worker: before, that flush stored its event past the missing ones
(a gap until the model worker came back). Now every append carries the events not yet confirmed
stored, and the ledger refuses one that does not follow its log (``LedgerGap``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from agentledger.app import runs as client_ops
from agentledger.app.devserver import DevServer
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime
from agentledger.domain import events as ev
from bench._chat_pack import CUSTOMER, STRANGER
from bench._stack import open_stack

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]


async def _model_call_waiting(handle: WorkflowHandle[object, object]) -> None:
    """Until the run's model step is scheduled on the models queue (nobody polls it yet)."""
    for _ in range(200):
        async for event in handle.fetch_history_events():
            scheduled = event.activity_task_scheduled_event_attributes
            if (
                event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                and scheduled.activity_type.name.endswith("model_step")
            ):
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the model step was never scheduled")


async def test_a_reply_refused_while_the_model_worker_is_down_leaves_no_gap(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> None:
    base = await open_stack(tmp_path, temporal_server.address, database_url, "unused")
    name = uuid.uuid4().hex[:8]
    settings = dataclasses.replace(
        base.settings, task_queue=f"runs-{name}", model_queue=f"models-{name}"
    )
    runtime = Runtime(settings, base.runtime.ledger)
    workers = {w.task_queue: w for w in runtime.workers(base.client)}
    models = workers.pop(f"models-{name}")
    async with AsyncExitStack() as running:
        for worker in workers.values():
            await running.enter_async_context(worker)
        order = get_pack("chat").make_work_order("I'd like to pick a colour", CUSTOMER)
        handle = await client_ops.start_run(
            base.client, settings.task_queue, order, issuer=base.issuer
        )
        await _model_call_waiting(handle)

        with pytest.raises(Refused):  # recorded, and flushed by the workflow's worker
            await client_ops.reply(
                base.client, handle.id, STRANGER.user_id, "blue", issuer=base.issuer
            )
        events = base.runtime.ledger.read(handle.id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert isinstance(events[-1], ev.ReplyRefused)

        await running.enter_async_context(models)  # the model worker is back
        state = await client_ops.wait_for(base.client, handle.id, pending_approval=False)
        assert state.awaiting is not None
    events = base.runtime.ledger.read(handle.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.kind for e in events].count("reply_refused") == 1
    base.runtime.ledger.engine.dispose()
