"""Canonical JSON and digests: one encoding for every hash in the system.

orjson encodes integers only within 64 bits (signed or unsigned) and raises beyond them. Such an
integer is written exactly instead, as its decimal digits (what JSON and Python's ``json`` write):
only values orjson refuses take that path, so every value that could be hashed before keeps its
bytes and its hash.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_UTC_Z
_LOWEST, _HIGHEST = -(2**63), 2**64 - 1
"""The integers orjson encodes itself."""
_CHUNK = 10**1000
"""Digits are written 1,000 at a time: ``str`` refuses integers over 4,300 digits."""


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTC datetimes: equal values always give equal bytes."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except orjson.JSONEncodeError as exc:
        if "Integer exceeds 64-bit range" not in str(exc):
            raise
        return orjson.dumps(_exact_integers(value), option=_OPTIONS)


def _exact_integers(value: Any) -> Any:
    """``value`` with every integer beyond orjson's range as a fragment of its exact digits."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not _LOWEST <= value <= _HIGHEST:
        return orjson.Fragment(_digits(value))
    if isinstance(value, dict):
        return {k: _exact_integers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_exact_integers(v) for v in value]
    return value


def _digits(value: int) -> str:
    magnitude, chunks = abs(value), []
    while magnitude:
        magnitude, chunk = divmod(magnitude, _CHUNK)
        chunks.append(chunk)
    head, *rest = reversed(chunks)
    return ("-" if value < 0 else "") + str(head) + "".join(f"{c:01000d}" for c in rest)


def sha256_hex(value: Any) -> str:
    """``sha256:<hex>`` of the canonical encoding of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
