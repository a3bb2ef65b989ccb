"""An approver's edits typed in as text (``approve --set NAME=VALUE``, the console's edit
form), read as the proposed call's arguments are.

A text argument takes the value as written (``--set reason=late delivery``); any other takes it
read as JSON (``--set amount=20.00``, ``--set notify=false``), so neither needs quoting twice.
The run checks the edited call against the tool's schema; this only decides how to read text.
"""

from __future__ import annotations

import argparse
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


def batch_of(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``approve RUN APR [RUN APR ...]``: the (run, approval) pairs, or a usage error (an odd
    count; edits or an elicitation's content, which answer one call, given to several)."""
    more = list(args.more)
    if len(more) % 2:
        raise ConfigError("approve takes RUN_ID APPROVAL_ID pairs; the last pair is incomplete")
    if more and (args.edits or args.content is not None):
        raise ConfigError("--set and --content decide one approval; give one RUN_ID APPROVAL_ID")
    return [(args.run_id, args.approval_id), *zip(more[::2], more[1::2], strict=True)]


def changed_fields(
    fields: Mapping[str, str], proposed: Mapping[str, JsonValue]
) -> list[tuple[str, str]]:
    """The form's argument fields whose text differs from the proposed value's, as ``--set``
    pairs (a form shows every argument; an untouched one is no edit)."""
    return [
        (name, text)
        for name, text in fields.items()
        if name in proposed and text != _as_text(proposed[name])
    ]


def _as_text(value: JsonValue) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()
