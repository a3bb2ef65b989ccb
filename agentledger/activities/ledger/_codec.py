"""Encoding for storage: one exact JSON encoding, size limits, and semantic payload equality.

Events are serialised once, by pydantic's Rust serialiser, size-checked, and handed to the driver
as ``PreEncoded`` bytes so the JSON column does not encode them a second time. Decoding uses the
standard library (exact integers of any size; orjson would turn 2**64 into a float).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import pydantic_core
from pydantic import ValidationError

from agentledger.activities.ledger._errors import LedgerError, PayloadRejected, PayloadTooLarge
from agentledger.domain.events import EVENT_LIST_ADAPTER, SCHEMA_VERSION, RunEvent
from agentledger.domain.upcasting import upcast


class PreEncoded(bytes):
    """JSON that is already encoded and checked: the column serialiser passes it through."""

    __slots__ = ()


def dumps(value: Any) -> bytes:
    if isinstance(value, PreEncoded):
        return value
    # Non-finite floats become null, as pydantic does for events: JSON has no NaN.
    return pydantic_core.to_json(value, inf_nan_mode="null")


def dumps_str(value: Any) -> str:
    return dumps(value).decode()


loads = json.loads


class EncodedEvent(NamedTuple):
    """An event and its ``run_events`` row (in ``_bulk.COLUMNS`` order), payload encoded."""

    event: RunEvent
    row: tuple[str, int, str, datetime, str, int, PreEncoded]

    @property
    def key(self) -> tuple[str, int]:
        return self.row[0], self.row[1]

    @property
    def body(self) -> PreEncoded:
        return self.row[6]


def encode_event(event: RunEvent, limit: int) -> EncodedEvent:
    body = event.__pydantic_serializer__.to_json(event)
    run_id, manifest_hash = event.run_id, event.manifest_hash
    if len(body) > limit or "\x00" in run_id or "\x00" in manifest_hash:
        what = f"event {event.kind} #{event.seq} of run {run_id!r}"
        check_ids(what, run_id, manifest_hash)
        check_size(body, what, limit)
    row = (
        run_id,
        event.seq,
        event.kind,
        event.recorded_at,
        manifest_hash,
        event.schema_version,
        PreEncoded(body),
    )
    return EncodedEvent(event, row)


def may_hold_nul(bodies: Iterable[bytes | str]) -> bool:
    """Whether any JSON text escapes U+0000 (a cheap scan; false positives only cost time)."""
    return any("\\u0000" in b if isinstance(b, str) else b"\\u0000" in b for b in bodies)


def encode_body(value: Any, what: str, limit: int) -> PreEncoded:
    return check_size(dumps(value), what, limit)


def check_size(body: bytes, what: str, limit: int) -> PreEncoded:
    if len(body) > limit:
        raise PayloadTooLarge(what, len(body), limit)
    return PreEncoded(body)


def check_ids(what: str, *ids: str) -> None:
    """Identifiers go into plain text columns, and PostgreSQL text cannot hold U+0000."""
    if any("\x00" in i for i in ids):
        raise PayloadRejected(f"{what}: an identifier contains a NUL character (U+0000)")


def clean_text(value: Any) -> Any:
    """Read models are for display: replace U+0000 (unstorable in PostgreSQL text) with U+FFFD.

    The log itself keeps the exact text; only derived rows are cleaned.
    """
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {clean_text(k): clean_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_text(v) for v in value]
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value, but a boolean never equals a number (which
    Python's ``True == 1`` would allow)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def load_events(rows: Sequence[tuple[int, str]]) -> list[RunEvent]:
    """Current-schema rows are parsed straight from JSON text by pydantic (one call for all);
    older ones go through the upcasters first."""
    try:
        if all(version == SCHEMA_VERSION for version, _ in rows):
            return EVENT_LIST_ADAPTER.validate_json("[" + ",".join(t for _, t in rows) + "]")
        return EVENT_LIST_ADAPTER.validate_python([upcast(loads(t)) for _, t in rows])
    except ValidationError as exc:
        error = exc.errors()[0]
        index = error["loc"][0] if error["loc"] else None
        bad = loads(rows[index][1]) if isinstance(index, int) else {}
        raise LedgerError(
            f"stored event {bad.get('kind')} #{bad.get('seq')} of run {bad.get('run_id')} "
            f"does not load with this build's schema: {error['msg']}"
        ) from exc
