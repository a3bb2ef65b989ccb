"""Provider failures, translated once into Temporal's retry vocabulary.

Temporal owns retries (the SDK clients are made with ``max_retries=0``), so every failure
leaves this module as an ``ApplicationError`` whose ``type`` names the cause and whose
``non_retryable`` says whether another attempt can help::

    ApplicationError
     ├── ModelRateLimited       429: retryable; honours Retry-After as the next retry delay
     ├── ModelOverloaded        529 (Anthropic's overloaded_error): retryable
     ├── ModelServerError       other 5xx, 408, 409: retryable
     ├── ModelTimeout           connect/read/write/pool timeout: retryable
     ├── ModelUnavailable       connection refused, reset, DNS, a stream cut mid-way: retryable
     ├── ModelRequestRejected   other 4xx (bad request, auth, unknown model): non-retryable
     └── ModelConfigError       profile settings invalid, API key variable unset: non-retryable

A reply that arrives but is not a valid decision is not an error: it is returned as output and
becomes a ``DecisionRejected`` event, so the model can be told and the run's budget bounds it.
Messages quote at most a short excerpt of a response body, scrubbed of every secret the worker
holds (a 401 often echoes the key it was sent), and never a request header.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio.exceptions import ApplicationError

from agentledger.activities.redaction import redact

_RETRYABLE_4XX = frozenset({408, 409, 429})
_EXCERPT = 300
_MAX_RETRY_AFTER = 600.0


class StreamCut(Exception):
    """A streamed reply ended before the provider's end of it (its ``[DONE]``, stop reason or
    completed event): a transport failure, never a reply to judge."""


def config_error(message: str) -> ApplicationError:
    return ApplicationError(message, type="ModelConfigError", non_retryable=True)


def sdk_error(exc: Exception, url: str) -> ApplicationError | None:
    """An ``openai`` or ``anthropic`` SDK failure as its typed ``ApplicationError``; ``None``
    for anything else (a bug, which should fail loudly)."""
    if isinstance(exc, _sdk_classes("APIStatusError")):
        response = exc.response
        return status_error(response.status_code, response.text, response.headers, url)
    if isinstance(exc, _sdk_classes("APITimeoutError")):
        return ApplicationError(
            redact(f"model provider at {url} timed out ({type(exc).__name__})"),
            type="ModelTimeout",
        )
    if isinstance(exc, StreamCut):
        return ApplicationError(
            redact(f"model provider at {url} cut its stream mid-way: {exc}"),
            type="ModelUnavailable",
        )
    if isinstance(exc, _sdk_classes("APIConnectionError")):
        cause = exc.__cause__ or exc
        return ApplicationError(
            redact(f"model provider at {url} is unreachable ({type(cause).__name__}: {cause})"),
            type="ModelUnavailable",
        )
    return None


def _sdk_classes(name: str) -> tuple[Any, ...]:
    """The SDKs' exception classes called ``name``, from the SDKs this process has imported:
    one that was never imported raised nothing, and is not imported (at ~1 s) to say so."""
    loaded = (sys.modules.get(sdk) for sdk in ("openai", "anthropic"))
    return tuple(getattr(module, name) for module in loaded if module is not None)


def status_error(status: int, text: str, headers: Mapping[str, str], url: str) -> ApplicationError:
    """One mapping from an HTTP status to a typed, retryable or final failure."""
    # Scrubbed before it is cut, so no prefix of a key survives at the excerpt's end.
    excerpt = redact(text)[:_EXCERPT].replace("\n", " ")
    message = redact(f"model provider at {url} answered HTTP {status}: {excerpt}")
    if status == 429:
        return ApplicationError(
            message,
            type="ModelRateLimited",
            next_retry_delay=_retry_after(headers.get("retry-after")),
        )
    if status == 529:
        return ApplicationError(message, type="ModelOverloaded")
    if status >= 500 or status in _RETRYABLE_4XX:
        return ApplicationError(message, type="ModelServerError")
    return ApplicationError(message, type="ModelRequestRejected", non_retryable=True)


def _retry_after(value: str | None) -> timedelta | None:
    """Seconds form only; an HTTP-date or nonsense leaves the policy's backoff in charge."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if seconds <= 0:
        return None
    return timedelta(seconds=min(seconds, _MAX_RETRY_AFTER))
