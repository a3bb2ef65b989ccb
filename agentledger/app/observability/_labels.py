"""Label values a scrape can afford: short identifiers from a bounded set, never free text.

Pack, step, tool and model-profile names are bounded by what is installed, and reason codes by
the code that emits them; a value that does not look like an identifier (a message, a user's
text) or comes after a label's first ``MAX_VALUES`` distinct values is reported as ``other``,
so no input can grow a metric's series without bound.
"""

from __future__ import annotations

import re
import threading

OTHER = "other"
MAX_VALUES = 100
_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,79}")


class BoundedLabels:
    """The values each (metric, label) has taken, capped; thread-safe."""

    def __init__(self, max_values: int = MAX_VALUES) -> None:
        self._max = max_values
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def value(self, label: str, raw: str | None) -> str:
        """``raw`` as a value of ``label`` (e.g. ``"runs_started_total.pack"``), or ``other``."""
        if raw is None or not _IDENTIFIER.fullmatch(raw):
            return OTHER
        seen = self._seen.get(label)
        if seen is not None and raw in seen:
            return raw
        with self._lock:
            seen = self._seen.setdefault(label, set())
            if raw in seen:
                return raw
            if len(seen) >= self._max:
                return OTHER
            seen.add(raw)
        return raw
