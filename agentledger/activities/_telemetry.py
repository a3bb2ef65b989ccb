"""Spans and log lines from inside activities, through the OpenTelemetry API alone.

The shell decides where they go (``agentledger.app.observability``): with no tracer provider
installed every span here is a no-op, and with no handler at INFO no log record is built. A span
started here is a child of the workflow span that started the activity (the tracing interceptor
carries that context on the activity's header). Activities run once per attempt, never on
replay, so nothing here is emitted twice for one attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue
from temporalio import activity

from agentledger.activities.ports import ModelReply
from agentledger.domain.context import ContextPacket
from agentledger.domain.events import RunEvent
from agentledger.domain.model_profile import ModelProfile

_TRACER = trace.get_tracer("agentledger.activities")


@contextmanager
def span(name: str, run_id: str, manifest_hash: str, **more: AttributeValue) -> Iterator[Span]:
    attributes: dict[str, AttributeValue] = {
        "agentledger.run_id": run_id,
        "agentledger.manifest_hash": manifest_hash,
    }
    attributes.update({f"agentledger.{key}": value for key, value in more.items()})
    with _TRACER.start_as_current_span(name, attributes=attributes) as current:
        yield current


def packet_built(current: Span, packet: ContextPacket) -> None:
    current.set_attributes(
        {
            "agentledger.packet_hash": packet.packet_hash,
            "agentledger.packet_tokens": packet.total_tokens,
            "agentledger.omissions": len(packet.omissions),
            "agentledger.outcome": "built",
        }
    )


def model_called(current: Span, profile: ModelProfile, reply: ModelReply) -> None:
    """The call's model and token counts, under OpenTelemetry's GenAI attribute names."""
    usage = reply.usage
    current.set_attributes(
        {
            "gen_ai.provider.name": profile.provider,
            "gen_ai.request.model": profile.model,
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "agentledger.model_profile": profile.name,
            "agentledger.tokens_estimated": usage.estimated,
            "agentledger.outcome": str(reply.output.get("type", "unknown")),
        }
    )


def log_recorded(events: Sequence[RunEvent]) -> None:
    """One log line per event an activity persisted, with its run id, seq and manifest hash
    (``agentledger.app.observability.logs`` renders them as JSON; the SDK's ``activity.logger``
    adds the activity's own details)."""
    if not events or not activity.logger.isEnabledFor(logging.INFO):
        return
    for event in events:
        activity.logger.info(
            "recorded %s",
            event.kind,
            extra={
                "run_id": event.run_id,
                "seq": event.seq,
                "manifest_hash": event.manifest_hash,
                "event": event.kind,
            },
        )
