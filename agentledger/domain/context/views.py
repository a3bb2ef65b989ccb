"""Two readers of one tool result: a slim view for the model, the whole thing for people.

Slimming is a judgement per tool (seed 004): a search result loses urls and long bodies, but a
booking keeps every price and reference. ``untouchable_fields`` are never dropped, cut or
truncated; an item is either kept with all of them or dropped whole (and the drop is counted).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from agentledger.domain.canonical import canonical_json
from agentledger.domain.tools import ModelView

_ELLIPSIS = " …"


def model_view(result: Mapping[str, JsonValue], view: ModelView) -> dict[str, JsonValue]:
    """The result as the model should see it: ``view.mode == "full"`` returns it unchanged."""
    if view.mode == "full":
        return dict(result)
    untouchable = frozenset(view.untouchable_fields)
    keep = frozenset(view.keep_fields) | untouchable
    out = {
        k: _shorten(v, view.truncate_words) if k not in untouchable else v
        for k, v in result.items()
        if k in keep
    }
    listed = result.get(view.list_field) if view.list_field else None
    if view.list_field and isinstance(listed, list):
        limit = len(listed) if view.max_items is None else view.max_items
        out[view.list_field] = [_slim_entry(e, keep, untouchable, view) for e in listed[:limit]]
        if len(listed) > limit:
            out[f"{view.list_field}_omitted"] = len(listed) - limit
    return out


def _slim_entry(
    entry: JsonValue, keep: frozenset[str], untouchable: frozenset[str], view: ModelView
) -> JsonValue:
    if not isinstance(entry, dict):
        return _shorten(entry, view.truncate_words)
    return {
        k: v if k in untouchable else _shorten(v, view.truncate_words)
        for k, v in entry.items()
        if k in keep
    }


def _shorten(value: JsonValue, words: int | None) -> JsonValue:
    if words is None or not isinstance(value, str):
        return value
    parts = value.split()
    return value if len(parts) <= words else " ".join(parts[:words]) + _ELLIPSIS


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"  # a visible gap points at the template bug


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else canonical_json(value).decode()


def _derived(result: Mapping[str, JsonValue]) -> dict[str, str]:
    """``{<list>_count}`` and ``{<list>_titles}`` for every list field, for one-line summaries."""
    out: dict[str, str] = {}
    for key, value in result.items():
        if isinstance(value, list):
            titles = [
                str(e.get("title") or e.get("name") or "") for e in value if isinstance(e, dict)
            ]
            out[f"{key}_count"] = str(len(value))
            out[f"{key}_titles"] = ", ".join(t for t in titles if t)
    return out


def user_view(result: Mapping[str, JsonValue], template: str, **fields: JsonValue) -> str:
    """One line for the activity stream: the filled template, then the complete result.

    Nothing is slimmed here; people see everything. ``{full}`` places the result explicitly.
    """
    full = canonical_json(dict(result)).decode()
    values = _Fields(_derived(result))
    values.update({k: _text(v) for k, v in {**result, **fields}.items()})
    values["full"] = full
    line = template.format_map(values)
    if "{full}" not in template:
        line = f"{line} | {full}"
    return " ".join(line.split())
