"""Structured logs: one JSON object per line, carrying the run id, seq and manifest hash.

Off unless ``AGENTLEDGER_LOG_FORMAT=json``. Activities log through the SDK's ``activity.logger``
and workflow code through ``workflow.logger`` (silent while history is replayed, so a replay
logs nothing twice); both attach their run's details, and this formatter lifts them into fields
of their own: ``run_id`` (the workflow id), ``seq``, ``manifest_hash`` and ``event`` where the
line is about one event, the activity and its attempt, and the current span's ``trace_id`` and
``span_id`` when tracing is on, so a line leads to its trace.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import IO, Any

from opentelemetry import trace
from temporalio import activity, workflow

__all__ = ["SWITCH", "JsonFormatter", "enabled", "install"]

SWITCH = "AGENTLEDGER_LOG_FORMAT"
# Set by agentledger's own log calls through ``extra=``.
FIELDS = ("run_id", "seq", "manifest_hash", "event", "step", "tool", "outcome")


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``AGENTLEDGER_LOG_FORMAT`` asks for JSON lines."""
    return environ.get(SWITCH, "").strip().lower() == "json"


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON (keys sorted as written: time, level, logger, message)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(run_fields(record))
        line.update(trace_fields())
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def run_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The run's fields a record carries: agentledger's own, then what the SDK's workflow and
    activity loggers attached (``temporal_workflow`` / ``temporal_activity``)."""
    found = {name: getattr(record, name) for name in FIELDS if hasattr(record, name)}
    in_workflow = getattr(record, "temporal_workflow", None)
    if isinstance(in_workflow, Mapping):
        found.setdefault("run_id", in_workflow.get("workflow_id"))
        found["temporal_run_id"] = in_workflow.get("run_id")
    in_activity = getattr(record, "temporal_activity", None)
    if isinstance(in_activity, Mapping):
        found.setdefault("run_id", in_activity.get("workflow_id"))
        found["temporal_run_id"] = in_activity.get("workflow_run_id")
        found["activity"] = in_activity.get("activity_type")
        found["attempt"] = in_activity.get("attempt")
    return found


def trace_fields() -> dict[str, str]:
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


def install(level: int = logging.INFO, stream: IO[str] | None = None) -> logging.Handler:
    """JSON lines on ``stream`` (stderr) for every logger at ``level`` and above. The SDK's
    loggers stop appending their details to the message: they are fields here."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    activity.logger.activity_info_on_message = False
    workflow.logger.workflow_info_on_message = False
    return handler
