"""What Temporal's history of a run says, read without any worker (``agentledger verify``)."""

from __future__ import annotations

from typing import Any

import orjson
from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.service import RPCError, RPCStatusCode

from agentledger.app.errors import NotFound
from agentledger.domain.events import EVENT_ADAPTER
from agentledger.domain.fold import project
from agentledger.domain.state import WorkingState


async def recorded_state(client: Client, run_id: str) -> WorkingState:
    """The run's state as Temporal's history records it, read without any worker.

    Every event the workflow emitted rides into the ledger inside an activity's input (its
    outbox), so folding those inputs, from the state a continued run started with, gives what
    Temporal knows independently of the ledger. Nothing is executed and no query is sent: a
    verifier never runs another run's work.
    """
    handle = client.get_workflow_handle(run_id)
    try:
        history = await handle.fetch_history()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise NotFound(f"no run {run_id} on this Temporal server") from None
        raise
    initial, events = WorkingState(), dict[int, Any]()
    codec = client.data_converter.payload_codec
    for event in history.events:
        if event.HasField("workflow_execution_started_event_attributes"):
            started = await _json_payloads(
                codec, event.workflow_execution_started_event_attributes.input
            )
            carried = started[0].get("continued") if started else None
            if carried:
                initial = WorkingState.model_validate(carried["state"])
        elif event.HasField("activity_task_scheduled_event_attributes"):
            inputs = event.activity_task_scheduled_event_attributes.input
            for arg in await _json_payloads(codec, inputs):
                for raw in arg.get("outbox") or arg.get("events") or ():
                    events.setdefault(raw["seq"], raw)
    later = [
        EVENT_ADAPTER.validate_python(events[s]) for s in sorted(events) if s > initial.last_seq
    ]
    return project(later, initial if initial.last_seq else None)


async def _json_payloads(codec: PayloadCodec | None, payloads: Any) -> list[dict[str, Any]]:
    """The JSON objects among ``payloads``, opened by the payload codec first (when on)."""
    opened = await codec.decode(payloads.payloads) if codec else payloads.payloads
    return [found for p in opened if isinstance(found := orjson.loads(p.data), dict)]
