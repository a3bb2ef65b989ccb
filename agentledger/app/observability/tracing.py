"""Traces: OpenTelemetry spans from a run's workflow down to its model and tool calls.

Off unless ``AGENTLEDGER_TRACING=1``. Where the spans go is the OpenTelemetry SDK's business,
configured by the standard variables it reads itself: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` and ``OTEL_BSP_*``.

Spans made in workflow code must survive replay: a run evicted from a worker's cache, or resumed
on another worker, re-executes its workflow code from the start. The provider installed here is
``temporalio.contrib.opentelemetry``'s replay-safe one: span and trace ids come from the
workflow's deterministic random, and a span that ends while history is replayed is not exported,
so work that already completed is traced once. ``interceptors`` carries the trace context from a
client into the workflow and from the workflow into each activity (a header on the command, not
a command of its own: the recorded histories replay unchanged).

One re-execution is live rather than a replay, and may export a span twice: a query to a run
that no worker caches (evicted, or ``AGENTLEDGER_MAX_CACHED_RUNS=0``) while one of its workflow
tasks is in flight re-runs that task's code to answer. Cached runs answer queries from memory.

Wiring: ``Client.connect(..., interceptors=tracing.interceptors(enabled))`` — workers built from
that client inherit the interceptor — and ``tracing.shutdown()`` before the process exits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from temporalio.client import Interceptor
from temporalio.contrib.opentelemetry import (
    OpenTelemetryInterceptor,
    ReplaySafeTracerProvider,
    create_tracer_provider,
)

from agentledger.app.errors import ConfigError

__all__ = ["SWITCH", "configure", "enabled", "interceptors", "shutdown"]

SWITCH = "AGENTLEDGER_TRACING"
DEFAULT_SERVICE_NAME = "agentledger"
_TRUE = frozenset({"1", "true", "yes", "on"})


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``AGENTLEDGER_TRACING`` asks for traces (``1``, ``true``, ``yes`` or ``on``)."""
    return environ.get(SWITCH, "").strip().lower() in _TRUE


def configure(
    exporter: SpanExporter | None = None,
    *,
    batch: bool = False,
    environ: Mapping[str, str] = os.environ,
) -> ReplaySafeTracerProvider:
    """The process's replay-safe tracer provider. Without ``exporter``: OTLP over HTTP in
    batches, as the ``OTEL_*`` variables say. With one: span by span as each ends (tests), or
    in batches off the worker's threads with ``batch``, as OTLP is.

    The global provider can be set once per process: a second call adds its exporter to the
    provider already installed."""
    provider = _installed() or _install(environ)
    if exporter is None:
        processor: SpanProcessor = BatchSpanProcessor(OTLPSpanExporter())
    elif batch:
        processor = BatchSpanProcessor(exporter)
    else:
        processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return provider


def interceptors(enabled: bool) -> list[Interceptor]:
    """The client interceptors that trace runs (none when tracing is off). A provider is
    configured from the ``OTEL_*`` variables unless ``configure`` installed one already."""
    if not enabled:
        return []
    if _installed() is None:
        configure()
    return [OpenTelemetryInterceptor()]


def shutdown() -> None:
    """Export what is still batched, then stop (a no-op when tracing never started)."""
    provider = _installed()
    if provider is not None:
        provider.force_flush()
        provider.shutdown()


def _installed() -> ReplaySafeTracerProvider | None:
    current = trace.get_tracer_provider()
    return current if isinstance(current, ReplaySafeTracerProvider) else None


def _install(environ: Mapping[str, str]) -> ReplaySafeTracerProvider:
    # OTEL_SERVICE_NAME wins when set; otherwise the service is called agentledger.
    named = {} if environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
    provider = create_tracer_provider(resource=Resource.create(named))
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        raise ConfigError(
            "another OpenTelemetry tracer provider is already installed in this process; "
            f"agentledger's traces need its replay-safe one ({SWITCH}=1 installs it first)"
        )
    return provider
