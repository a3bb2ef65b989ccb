"""Kinds of work on task queues of their own: model calls and tool calls go to the queues the
deployment names, served by workers that take only that kind, and the run is the same run."""

from __future__ import annotations

import dataclasses
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from agentledger.app import runs as client_ops
from agentledger.app.devserver import DevServer
from agentledger.app.errors import ConfigError
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime
from bench._stack import open_stack
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # routing, not storage
]


async def test_model_and_tool_calls_run_on_their_own_queues_and_the_refund_is_paid_once(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> None:
    base = await open_stack(tmp_path, temporal_server.address, database_url, "unused")
    name = uuid.uuid4().hex[:8]
    settings = dataclasses.replace(
        base.settings,
        task_queue=f"runs-{name}",
        model_queue=f"models-{name}",
        tool_queue=f"tools-{name}",
    )
    runtime = Runtime(settings, base.runtime.ledger)
    workers = runtime.workers(base.client)
    assert sorted(w.task_queue for w in workers) == sorted(
        [settings.task_queue, f"models-{name}", f"tools-{name}"]
    )
    with pytest.raises(ConfigError, match="queues of their own"):
        runtime.worker(base.client)

    stack = dataclasses.replace(base, runtime=runtime, settings=settings)
    async with AsyncExitStack() as running:
        for worker in workers:
            await running.enter_async_context(worker)
        order = get_pack("support").make_work_order(REQUEST, stack.principal("usr_73"))
        handle = await client_ops.start_run(
            stack.client, settings.task_queue, order, issuer=stack.issuer
        )
        state = await stack.until_approval_or_end(handle.id)
        (approval_id,) = state.pending_approvals
        await stack.decide(handle.id, approval_id, "ops_lead_1")
        await handle.result()

    queues: dict[str, set[str]] = {}
    for event in (await handle.fetch_history()).events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            queues.setdefault(scheduled.activity_type.name, set()).add(scheduled.task_queue.name)
    assert queues["model_step"] == {f"models-{name}"}
    assert queues["execute_tool"] == {f"tools-{name}"}
    assert queues["prepare_run"] == {settings.task_queue}
    assert refund_rows(stack) == 1


async def test_a_worker_asked_for_a_kind_of_work_nobody_has_is_refused(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> None:
    stack = await open_stack(tmp_path, temporal_server.address, database_url, "unused")
    with pytest.raises(ConfigError, match="no kind of work 'modles'"):
        stack.runtime.workers(stack.client, ["workflows", "modles"])
