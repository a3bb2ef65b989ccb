"""Traces of the refund scenario on the real Temporal server: the span tree from the run down to
each model and tool call, with its attributes, exported once however often the workflow code
re-executes (a worker that caches no run replays it at every task; a replayed history exports
nothing)."""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker import Replayer

from agentledger.app.devserver import DevServer
from agentledger.app.observability import tracing
from agentledger.app.replayer import replayer as checking_replayer
from bench._stack import open_stack
from bench.harness import Harness

REQUEST = "Can I get a refund for order ord_4821? It arrived late."
HISTORIES = Path(__file__).parents[1] / "replay" / "histories"
# The support run: look the order up, search the policy, proceed, draft (a refund proposed,
# approved and executed after the step), draft the answer.
STEPS = ["choose_next_action"] * 3 + ["draft_answer"] * 2
# The refund the draft proposed is acted on after its step, then the run answers.
TOP = ["agentledger.step"] * 4 + ["agentledger.act", "agentledger.step"]

pytestmark = pytest.mark.temporal


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """One provider per process (OpenTelemetry's global can be set once); cleared per test."""
    spans = InMemorySpanExporter()
    tracing.configure(spans)
    return spans


async def traced_stack(
    server: DevServer, database_url: str, tmp_path: Path, *, cached_runs: int = 1000
) -> Harness:
    stack = await open_stack(tmp_path, server.address, f"{database_url}", f"t-{uuid.uuid4().hex}")
    config = stack.client.config()
    config["interceptors"] = tracing.interceptors(True)
    settings = dataclasses.replace(stack.settings, max_cached_runs=cached_runs)
    stack.runtime.settings = settings
    return Harness(stack.runtime, Client(**config), settings)


@pytest.fixture
async def traced(
    temporal_server: DevServer, tmp_path: Path, exporter: InMemorySpanExporter
) -> AsyncIterator[Harness]:
    stack = await traced_stack(temporal_server, f"sqlite:///{tmp_path / 'l.db'}", tmp_path)
    async with stack.runtime.worker(stack.client):
        yield stack
    stack.runtime.ledger.engine.dispose()


async def pending_approval(h: Harness, run_id: str) -> str:
    """The run's pending approval, read from the ledger's inbox, not by query: a query to a run
    no worker caches re-executes its open workflow task to answer (see ``interceptors``)."""
    (pending, *_) = await h.in_inbox(run_id)
    return pending.approval_id


async def refund_run(h: Harness, exporter: InMemorySpanExporter) -> tuple[str, list[ReadableSpan]]:
    exporter.clear()
    run_id = await h.start(REQUEST)
    await h.decide(run_id, await pending_approval(h, run_id), "ops_lead_1")
    await h.finish(run_id)
    return run_id, [s for s in exporter.get_finished_spans() if s.name.startswith("agentledger.")]


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name == name), key=lambda s: s.start_time or 0)


def children(spans: Sequence[ReadableSpan], parent: ReadableSpan) -> list[str]:
    own = parent.context.span_id
    found = [s for s in spans if s.parent is not None and s.parent.span_id == own]
    return [s.name for s in sorted(found, key=lambda s: s.start_time or 0)]


def attribute(span: ReadableSpan, key: str) -> object:
    assert span.attributes is not None
    return span.attributes.get(f"agentledger.{key}")


async def test_a_refund_run_traces_each_step_down_to_its_model_and_tool_calls(
    traced: Harness, exporter: InMemorySpanExporter
) -> None:
    run_id, spans = await refund_run(traced, exporter)

    (root,) = named(spans, "agentledger.run")
    assert root.parent is None and attribute(root, "outcome") == "completed"
    manifest_hash = attribute(root, "manifest_hash")
    assert manifest_hash == traced.runtime.ledger.read(run_id)[-1].manifest_hash != ""
    assert all(attribute(s, "run_id") == run_id for s in spans)
    assert {attribute(s, "manifest_hash") for s in spans if s.name != "agentledger.run"} <= {
        manifest_hash,
        "",  # prepare starts before the manifest exists, and says which one it froze
    }
    assert children(spans, root) == ["agentledger.prepare", *TOP]
    steps = named(spans, "agentledger.step")
    assert [attribute(s, "step") for s in steps] == STEPS
    assert [attribute(s, "outcome") for s in steps] == [
        "call_tool",
        "call_tool",
        "proceed",
        "answer",  # proposes the refund
        "answer",
    ]
    first, _, proceed, draft, _ = steps
    assert children(spans, first) == [
        "agentledger.context_build",
        "agentledger.model_call",
        "agentledger.authorise",
        "agentledger.tool_call",
    ]
    assert children(spans, proceed) == ["agentledger.context_build", "agentledger.model_call"]
    assert children(spans, draft) == ["agentledger.context_build", "agentledger.model_call"]
    (act,) = named(spans, "agentledger.act")
    assert attribute(act, "step") == "draft_answer" and attribute(act, "tool") == "create_refund"
    assert children(spans, act) == [
        "agentledger.authorise",  # needs approval
        "agentledger.approval_wait",
        "agentledger.authorise",  # re-checked at dispatch
        "agentledger.tool_call",
    ]


async def test_spans_carry_the_outcomes_of_authorisation_approval_and_tool_calls(
    traced: Harness, exporter: InMemorySpanExporter
) -> None:
    _, spans = await refund_run(traced, exporter)

    verdicts = [
        (attribute(s, "tool"), attribute(s, "outcome"))
        for s in named(spans, "agentledger.authorise")
    ]
    assert verdicts == [
        ("get_order", "allow"),
        ("search_returns_policy", "allow"),
        ("create_refund", "needs_approval"),
        ("create_refund", "allow"),
    ]
    (wait,) = named(spans, "agentledger.approval_wait")
    assert attribute(wait, "outcome") == "granted" and attribute(wait, "tool") == "create_refund"
    assert wait.end_time is not None and wait.start_time is not None
    assert wait.end_time > wait.start_time  # a real duration: the time a person took
    calls = named(spans, "agentledger.tool_call")
    assert [(attribute(s, "tool"), attribute(s, "outcome")) for s in calls] == [
        ("get_order", "succeeded"),
        ("search_returns_policy", "succeeded"),
        ("create_refund", "succeeded"),
    ]
    for call in calls:  # the activity's span is the workflow span's child, across the header
        assert children(spans, call) == ["agentledger.tool_execute"]
    (refund,) = [
        s
        for s in named(spans, "agentledger.tool_execute")
        if attribute(s, "tool") == "create_refund"
    ]
    assert attribute(refund, "outcome") == "succeeded"
    model_calls = named(spans, "agentledger.model_call")
    assert len(model_calls) == 5
    assert all(s.attributes and s.attributes.get("gen_ai.request.model") for s in model_calls)
    assert all(attribute(s, "packet_hash") for s in named(spans, "agentledger.context_build"))


def shape(spans: Sequence[ReadableSpan]) -> Counter[tuple[str, object, object]]:
    return Counter((s.name, attribute(s, "step"), attribute(s, "outcome")) for s in spans)


async def test_a_run_replayed_at_every_task_is_traced_exactly_once(
    temporal_server: DevServer, tmp_path: Path, exporter: InMemorySpanExporter, traced: Harness
) -> None:
    _, cached = await refund_run(traced, exporter)
    uncached = await traced_stack(
        temporal_server, f"sqlite:///{tmp_path / 'u.db'}", tmp_path / "u", cached_runs=0
    )
    async with uncached.runtime.worker(uncached.client):
        _, replayed = await refund_run(uncached, exporter)
    uncached.runtime.ledger.engine.dispose()

    assert shape(replayed) == shape(cached)  # each span once, though the code re-ran each task
    assert len({s.context.span_id for s in replayed}) == len(replayed)
    (root,) = named(replayed, "agentledger.run")
    assert children(replayed, root) == ["agentledger.prepare", *TOP]


async def test_replaying_a_traced_run_exports_no_span(
    traced: Harness, exporter: InMemorySpanExporter
) -> None:
    run_id, _ = await refund_run(traced, exporter)
    history = await traced.client.get_workflow_handle(run_id).fetch_history()
    exporter.clear()

    result = await replayer(traced.client.data_converter).replay_workflow(history)

    assert result.replay_failure is None
    assert exporter.get_finished_spans() == ()


@pytest.mark.parametrize("name", ["refund_approved_v7", "refund_rejected_v7", "conversation_v7"])
async def test_recorded_histories_replay_with_tracing_on_and_export_nothing(
    name: str, exporter: InMemorySpanExporter
) -> None:
    import bench._chat_pack  # noqa: F401  (registers the conversation history's pack)

    path = HISTORIES / f"{name}.json"
    history = WorkflowHistory.from_json(name, path.read_text())
    exporter.clear()

    result = await replayer().replay_workflow(history)

    assert result.replay_failure is None
    assert exporter.get_finished_spans() == ()


def replayer(converter: DataConverter = pydantic_data_converter) -> Replayer:
    """A replayer decoding as ``converter`` (a live run's: its client's, payload codec and all)."""
    return checking_replayer(converter=converter, interceptors=tracing.interceptors(True))
