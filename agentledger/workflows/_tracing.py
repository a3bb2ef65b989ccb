"""Spans in workflow code, safe to re-execute on replay.

A span is real only when the shell installed ``temporalio.contrib.opentelemetry``'s replay-safe
tracer provider (``AGENTLEDGER_TRACING=1``): its ids come from the workflow's deterministic
random and a span that ends during replay is not exported. Any other provider gets a no-op
tracer here, so an ordinary one can never emit a span per replay. Spans create no commands and
change nothing the workflow decides.

A span ends when its block completes, when the run fails with a workflow failure or continues
as new. Anything else (a worker evicting the run from its cache, a bug failing the task) leaves
it open: the replay that resumes the run re-creates it with the same ids and ends it once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    # Shared with the worker: the provider, its context and the exporters live outside the
    # sandbox; a re-imported copy would see no provider and trace nothing.
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Span, Status, StatusCode, Tracer
    from opentelemetry.util.types import AttributeValue
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider

    from agentledger.domain import events as ev

from agentledger.workflows._core import Run

Attributes = dict[str, AttributeValue]

RUN_ID = "agentledger.run_id"
MANIFEST_HASH = "agentledger.manifest_hash"
STEP = "agentledger.step"
TOOL = "agentledger.tool"
OUTCOME = "agentledger.outcome"
OPERATION_ID = "agentledger.operation_id"
APPROVAL_ID = "agentledger.approval_id"
REASON = "agentledger.reason_code"

_NO_OP = trace.NoOpTracer()


def of_run(run: Run, **more: AttributeValue) -> Attributes:
    """The run's id and manifest hash, and ``more`` as ``agentledger.<name>`` attributes."""
    found: Attributes = {
        RUN_ID: run.state.run_id or run.rec.run_id,
        MANIFEST_HASH: run.manifest_hash,
    }
    found.update({f"agentledger.{name}": value for name, value in more.items()})
    return found


_TRACERS: dict[int, Tracer] = {}


def _tracer() -> Tracer:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        return _NO_OP
    # One tracer per provider: the SDK builds a new one (and its scope) at every get_tracer.
    found = _TRACERS.get(id(provider))
    if found is None:
        found = _TRACERS[id(provider)] = provider.get_tracer("agentledger.workflows")
    return found


def step_outcome(recorded: list[ev.RunEvent]) -> Attributes:
    """How a model step ended, from the events it recorded: the decision taken (``call_tool``,
    ``proceed``, ``answer``, ...), ``rejected`` or ``failed`` with its reason code."""
    for event in reversed(recorded):
        if isinstance(event, ev.DecisionRecorded):
            return {OUTCOME: event.decision.type}
        if isinstance(event, ev.DecisionRejected | ev.RunFailed):
            outcome = "rejected" if isinstance(event, ev.DecisionRejected) else "failed"
            return {OUTCOME: outcome, REASON: event.reason_code}
    return {OUTCOME: "none"}


def log_outcome(run: Run, what: str, outcome: Attributes) -> None:
    """One log line (silent during replay: ``workflow.logger``) with the run's id, its last seq
    and its manifest hash, and what ended how."""
    workflow.logger.info(
        "%s %s",
        what,
        outcome.get(OUTCOME, ""),
        extra={
            "run_id": run.state.run_id or run.rec.run_id,
            "seq": run.state.last_seq,
            "manifest_hash": run.manifest_hash,
            **{key.removeprefix("agentledger."): value for key, value in outcome.items()},
        },
    )


@contextmanager
def span(name: str, attributes: Attributes) -> Iterator[Span]:
    """A span around a block of workflow code, current for what the block starts (activities
    started inside it are its children)."""
    tracer = _tracer()
    if tracer is _NO_OP:
        yield trace.INVALID_SPAN  # tracing off: nothing to make current, nothing to end
        return
    current = tracer.start_span(name, attributes=attributes)
    token = otel_context.attach(trace.set_span_in_context(current))
    evicted = False
    try:
        yield current
    except GeneratorExit:
        # The worker evicted the run and closes its coroutine, in another context than the one
        # attached: nothing to detach there (OpenTelemetry would log an error), and the span
        # stays open for the replay that resumes the run.
        evicted = True
        raise
    except workflow.ContinueAsNewError:
        current.set_attribute(OUTCOME, "continued_as_new")
        current.end()
        raise
    except FailureError as exc:
        current.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        current.end()
        raise
    else:
        current.end()
    finally:
        if not evicted:
            otel_context.detach(token)
