"""Secrets this worker holds, scrubbed from any text built from a peer's reply.

A provider's 401 may echo the key it was sent; an MCP server's error may quote its token. Such
text becomes an exception message, then a Temporal failure, a ``RunFailed`` event and a log
line, all of which outlive the worker. So every place that reads a secret (a model provider's key,
an MCP bearer token or credential variable) ``hold``s its value, and every place that turns a
peer's words into an error ``redact``s them first. Values are kept only in this process's memory.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

REDACTED = "[redacted]"
_held: set[str] = set()
_lock = threading.Lock()


def hold(*secrets: str | None) -> None:
    """Remember values to scrub from now on (a rotated key adds its new value)."""
    with _lock:
        _held.update(s for s in secrets if s)


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every held secret (raw or JSON-escaped) replaced by ``[redacted]``."""
    with _lock:
        secrets = _held | {s for s in extra if s}
    # Longest first, so a key containing another held value is replaced whole.
    for secret in sorted(secrets, key=len, reverse=True):
        for form in {secret, json.dumps(secret)[1:-1]}:
            text = text.replace(form, REDACTED)
    return text


def redact_bytes(body: bytes) -> bytes:
    """A response body with held secrets scrubbed; the same bytes when none occur."""
    text = body.decode(errors="replace")
    scrubbed = redact(text)
    return body if scrubbed == text else scrubbed.encode()
