"""Upcasting: stored events of older schema versions are upgraded on read, never rewritten.

The log is immutable, so a change to an event's shape ships with a pure ``dict -> dict`` function
keyed by ``(kind, from_version)`` that turns the old stored payload into the next version's shape.
``upcast`` applies them in order until the payload reaches ``SCHEMA_VERSION``; a kind whose shape
did not change between two versions needs no function, its version number simply moves on.

Payloads stored before ``schema_version`` existed count as version 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentledger.domain.errors import DomainError
from agentledger.domain.events import SCHEMA_VERSION

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


class UnsupportedSchemaVersion(DomainError):
    """A stored event claims a version this code does not know (written by newer code)."""

    code = "unsupported_schema_version"


def upcaster(kind: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register ``fn`` as the step ``(kind, from_version) -> from_version + 1``."""

    def register(fn: Upcaster) -> Upcaster:
        key = (kind, from_version)
        if key in _UPCASTERS:
            raise ValueError(f"an upcaster for {kind} v{from_version} is already registered")
        if not 0 <= from_version < SCHEMA_VERSION:
            raise ValueError(f"{kind} v{from_version} is not below SCHEMA_VERSION {SCHEMA_VERSION}")
        _UPCASTERS[key] = fn
        return fn

    return register


def registered() -> frozenset[tuple[str, int]]:
    """The ``(kind, from_version)`` steps known to this build (for tests and diagnostics)."""
    return frozenset(_UPCASTERS)


def upcast(raw: Mapping[str, Any]) -> Payload:
    """Return ``raw`` in the current schema. Current payloads come back as they are (no copy)."""
    version = raw.get("schema_version", 0)
    if version == SCHEMA_VERSION and isinstance(raw, dict):
        return raw
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 0:
        raise UnsupportedSchemaVersion(
            f"event {raw.get('kind')!r} #{raw.get('seq')} has schema_version {version!r}; "
            f"this build reads up to {SCHEMA_VERSION}"
        )
    payload = dict(raw)
    while version < SCHEMA_VERSION:
        step = _UPCASTERS.get((str(payload.get("kind")), version))
        if step is not None:
            # Each step gets its own copy, so an upcaster can never alter the caller's dict.
            payload = step(dict(payload))
        version += 1
        payload["schema_version"] = version
    return payload


# --- v0 -> v1 ----------------------------------------------------------------------------------
# Version 0 is the pre-release shape, before the envelope carried ``schema_version``.


@upcaster("run_failed", 0)
def _run_failed_v0(payload: Payload) -> Payload:
    """v0 kept one ``error`` string ``"<code>: <message>"``; v1 splits code and message."""
    code, sep, message = str(payload.pop("error", "")).partition(":")
    payload["reason_code"] = code.strip() if sep else "unknown"
    payload["message"] = message.strip() if sep else code.strip()
    return payload


@upcaster("approval_granted", 0)
def _approval_granted_v0(payload: Payload) -> Payload:
    """v0 named the deciding principal ``approved_by``; v1 calls it ``approver``."""
    payload["approver"] = payload.pop("approved_by")
    return payload
