"""What a checked-in history says the run did, decoded from its payloads.

The workflow sends every event it emits to an activity (the outbox of the next call, or an
``append_events`` flush), so the scheduled activities' inputs are the run's recorded event log.
Flushes from before ``flush-as-activity`` ran as local activities, whose inputs Temporal does not
record: their markers only say how many events each appended.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import AwareDatetime, BaseModel, TypeAdapter
from sqlalchemy import create_engine
from sqlalchemy.pool import StaticPool
from temporalio.api.common.v1 import Payloads
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from agentledger.activities.memory import (
    MemoryStore,
    ProposeMemoryInput,
    install,
    remember_preference,
)
from agentledger.activities.messages import (
    AppendInput,
    EligibleApproversInput,
    ForkPointInput,
    LookUpPrincipalInput,
    ModelStepInput,
    ModelStepResult,
    NoticeInput,
    PrepareRunInput,
    ResumeInput,
    ToolStepInput,
)
from agentledger.domain.context import ContextItem
from agentledger.domain.events import RunEvent
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.upcasting import upcast
from agentledger.workflows.messages import Continuation, RunInput

# Every activity the workflow schedules, by the input model it sends; an activity missing here
# fails the decoding, so a new one cannot carry events past this check unseen.
ACTIVITY_INPUTS: Mapping[str, type[BaseModel]] = {
    "prepare_run": PrepareRunInput,
    "model_step": ModelStepInput,
    "execute_tool": ToolStepInput,
    "reconcile_tool": ToolStepInput,
    "propose_memory": ProposeMemoryInput,
    "append_events": AppendInput,
    "eligible_approvers": EligibleApproversInput,
    "look_up_principal": LookUpPrincipalInput,
    "resume_run": ResumeInput,
    "fork_point": ForkPointInput,
    "notify_approval": NoticeInput,
}

# model_step adds the principal's approved memories to the candidates, read from the memory
# store: neither they nor a digest of them reach the history (and the manifest says
# memory_snapshot="none"). record.py's embedded stack seeds one, usr_73's language preference
# (agentledger.app.runtime.Runtime.seed), at wall-clock time just before the run starts, and its
# created_at is part of every packet that shows it. record.py writes that time per history to
# recorded_memories.json; no entry means the run saw no memory (histories recorded before memory
# entered the run in 232faec, and the loop runs, whose principal has none).
# The two v3 entries predate that: they were recovered by searching the second before each run
# started for the instant that reproduces the run's first draft_answer packet hash, and every
# other packet of the run (a second draft_answer among them) has to match with it too.
SEEDED_MEMORIES = Path(__file__).with_name("recorded_memories.json")
PREFERENCE_SEEDED_AT: Mapping[str, datetime] = TypeAdapter(dict[str, AwareDatetime]).validate_json(
    SEEDED_MEMORIES.read_bytes()
)

Memories = Callable[[datetime], list[ContextItem]]


@dataclass
class ModelStep:
    """One scheduled ``model_step``: what it was sent and (once completed) what it returned."""

    event_id: int
    input: ModelStepInput
    result: ModelStepResult | None = None


@dataclass
class RecordedRun:
    name: str
    started: RunInput
    started_at: datetime
    manifest: ExecutionManifest | None = None
    events: dict[int, RunEvent] = field(default_factory=dict)
    """Deduplicated by seq: appends are idempotent and a failed call's outbox is resent."""
    resent_differently: list[tuple[RunEvent, RunEvent]] = field(default_factory=list)
    model_steps: dict[int, ModelStep] = field(default_factory=dict)
    local_flushes: list[int] = field(default_factory=list)
    """How many events each local-activity flush appended (their inputs are not in history)."""
    continued_as_new: Continuation | None = None

    def add_events(self, events: list[RunEvent]) -> None:
        for event in events:
            first = self.events.setdefault(event.seq, event)
            if first != event:
                self.resent_differently.append((first, event))


def read_history(path: Path) -> RecordedRun:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    head = history.events[0]
    run = RecordedRun(
        path.stem,
        RunInput.model_validate(_decode(head.workflow_execution_started_event_attributes.input)),
        head.event_time.ToDatetime(tzinfo=UTC),
    )
    if run.started.continued is not None:
        run.manifest = run.started.continued.manifest
    scheduled: dict[int, str] = {}
    for event in history.events:
        _read_event(run, event, scheduled)
    return run


def _read_event(run: RecordedRun, event: HistoryEvent, scheduled: dict[int, str]) -> None:
    if event.HasField("activity_task_scheduled_event_attributes"):
        attrs = event.activity_task_scheduled_event_attributes
        message = _decode_input(attrs.activity_type.name, _decode(attrs.input))
        scheduled[event.event_id] = attrs.activity_type.name
        run.add_events(list(getattr(message, "outbox", None) or getattr(message, "events", [])))
        if isinstance(message, ModelStepInput):
            run.model_steps[event.event_id] = ModelStep(event.event_id, message)
    elif event.HasField("activity_task_completed_event_attributes"):
        done = event.activity_task_completed_event_attributes
        activity = scheduled[done.scheduled_event_id]
        if activity in ("prepare_run", "resume_run"):  # the manifest the ledger holds for it
            run.manifest = ExecutionManifest.model_validate(_decode(done.result))
        elif activity == "model_step":
            result = ModelStepResult.model_validate(_decode(done.result))
            run.model_steps[done.scheduled_event_id].result = result
    elif event.HasField("marker_recorded_event_attributes"):
        details = event.marker_recorded_event_attributes.details
        if "data" in details and _decode(details["data"])["activity_type"] == "append_events":
            run.local_flushes.append(int(_decode(details["result"])))
    elif event.HasField("workflow_execution_continued_as_new_event_attributes"):
        carried = event.workflow_execution_continued_as_new_event_attributes.input
        run.continued_as_new = RunInput.model_validate(_decode(carried)).continued


def _decode_input(activity: str, raw: dict[str, Any]) -> BaseModel:
    """The activity's input as its model, events upcast the way the ledger reads them."""
    model = ACTIVITY_INPUTS.get(activity)
    if model is None:
        raise AssertionError(f"unknown activity {activity!r}: teach tests/replay/_recorded.py")
    for key in ("outbox", "events"):
        if key in raw:
            raw = {**raw, key: [upcast(e) for e in raw[key]]}
    return model.model_validate(raw)


def _decode(payloads: Payloads) -> Any:
    """The single JSON payload of a call (pydantic_data_converter writes ``json/plain``)."""
    (payload,) = payloads.payloads
    assert payload.metadata["encoding"] == b"json/plain", payload.metadata
    return json.loads(payload.data)


def recorded_memories(run: RecordedRun) -> Memories:
    """The memory candidates the recorded run's model steps saw, as of a step's ``now``."""
    seeded_at = PREFERENCE_SEEDED_AT.get(run.name)
    if seeded_at is None:
        return lambda now: []
    engine = create_engine("sqlite://", poolclass=StaticPool)
    install(engine)
    store = MemoryStore(engine)
    principal = run.started.work_order.principal
    remember_preference(store, principal, "language", "en", seeded_at)
    return lambda now: store.context_items(principal, now)


def register_loop_packs() -> None:
    """The packs of the recorded loop chains (``bench._noop_pack``), by the names they ran under."""
    from agentledger.app.registry import register_pack

    register_pack("bench_can", "bench._noop_pack:CONTINUING_PACK")
    register_pack("bench_window", "bench._noop_pack:WINDOWED_PACK")
