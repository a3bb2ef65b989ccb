"""Canonical JSON and digests: one encoding for every hash in the system."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTC datetimes: equal values always give equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_UTC_Z)


def sha256_hex(value: Any) -> str:
    """``sha256:<hex>`` of the canonical encoding of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
