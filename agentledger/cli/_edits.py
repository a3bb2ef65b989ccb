"""``--set NAME=VALUE``: an approver's edits to a proposed call, typed as its arguments are.

A text argument takes the value as written (``--set reason=late delivery``); any other takes it
read as JSON (``--set amount=20.00``, ``--set notify=false``), so neither needs quoting twice.
The run checks the edited call against the tool's schema; this only decides how to read text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import orjson
from pydantic import JsonValue

from agentledger.app.errors import ConfigError


def typed_edits(
    sets: Sequence[tuple[str, str]], proposed: Mapping[str, JsonValue]
) -> dict[str, JsonValue]:
    """The edits ``--set`` asks for, each typed after the proposed argument it replaces."""
    edits: dict[str, JsonValue] = {}
    for name, text in sets:
        if isinstance(proposed.get(name), str):
            edits[name] = text
            continue
        try:
            edits[name] = orjson.loads(text)
        except orjson.JSONDecodeError:
            if name in proposed:
                kind = type(proposed[name]).__name__
                raise ConfigError(f"--set {name}: {text!r} is not a {kind} (JSON)") from None
            edits[name] = text
    return edits
