"""How large and how deep what a run accepts from outside may be.

Model output, tool arguments and work orders come from outside the runtime. Unbounded, they end
up in events the ledger refuses (over 1 MiB), in payloads Temporal refuses (over 2 MB) or nested
deeper than a serialiser will go: failures that repeat on every retry. Bounded here, at the
boundary, they are refused once, as a typed problem, and the run goes on or ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue

if TYPE_CHECKING:
    from agentledger.domain.workorder import WorkOrder

MAX_NESTING = 32
"""Levels of lists and objects in one JSON value (real tool arguments use two or three)."""
MAX_VALUE_CHARS = 64 * 1024
"""Characters in one JSON value's strings and keys, roughly its size."""
MAX_ANSWER_CHARS = 20_000
MAX_RATIONALE_CHARS = 4_000
MAX_QUESTION_CHARS = 4_000
MAX_REPLY_CHARS = 20_000
"""A customer's reply in a conversation: a message, not a document (longer ones are refused)."""
MAX_WORK_ORDER_CHARS = 256 * 1024
MAX_RAW_REPLY_CHARS = 8_000
"""A rejected model reply as recorded: enough to see what went wrong, never a whole document."""
INTEGER_RANGE = (-(2**63), 2**64 - 1)
"""Integers within 64 bits, signed or unsigned. Beyond them most systems of record, JSON parsers
and orjson cannot hold a number exactly: refused here rather than rounded somewhere later."""


def json_problem(value: JsonValue, what: str, max_chars: int = MAX_VALUE_CHARS) -> str | None:
    """Why ``value`` is too deep or too large to accept (``None``: it is not).

    Iterative, so a hostile value cannot exhaust the interpreter's stack while being measured.
    """
    size, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"{what} nest deeper than {MAX_NESTING} levels"
        if isinstance(item, dict):
            size += sum(len(k) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            size += len(item)
        elif isinstance(item, int) and not INTEGER_RANGE[0] <= item <= INTEGER_RANGE[1]:
            return f"{what} carry an integer beyond 64 bits"
        else:
            size += 8
        if size > max_chars:
            return f"{what} exceed {max_chars} characters"
    return None


def unencodable_problem(value: JsonValue, what: str) -> str | None:
    """Why ``value`` cannot be recorded as text (``None``: it can): a string or key holding a
    lone surrogate (``"\\ud800"``), which Python keeps but no UTF-8 or JSON can carry. Found
    here it is refused once; found by a serialiser it fails the same way on every retry."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, str) and not _encodable(item):
            return f"{what} carry text that is not valid Unicode (a lone surrogate)"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def work_order_problem(work_order: WorkOrder) -> str | None:
    """Why a run cannot accept ``work_order`` (``None``: it can): too large or too deep to
    record as the run's first event."""
    return json_problem(work_order.model_dump(mode="json"), "the work order", MAX_WORK_ORDER_CHARS)


def bounded_work_order(work_order: WorkOrder) -> WorkOrder:
    """What a refused work order is recorded as: its request cut short, its references and
    grants dropped (the refused run authorises nothing). The whole stays in Temporal history."""
    text = work_order.request_text
    return work_order.model_copy(
        update={
            "objective": work_order.objective[:200],
            "request_text": text[:2_000]
            + (f" … [{len(text)} characters]" if len(text) > 2_000 else ""),
            "references": {},
            "grants": (),
        }
    )


def undecodable_work_order(problem: str) -> WorkOrder:
    """What a run whose input could not be decoded at all is recorded as: no requester, no pack,
    nothing authorised; ``problem`` says why. The raw input stays in Temporal history."""
    from agentledger.domain.principal import Principal
    from agentledger.domain.workorder import WorkOrder

    return WorkOrder(
        objective="(undecodable work order)",
        request_text=problem,
        principal=Principal(user_id="(unknown)", tenant_id="(unknown)"),
        pack="",
        agent_profile_id="",
        grants=(),
    )


def bounded_raw(text: str, limit: int = MAX_RAW_REPLY_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters not recorded]"
