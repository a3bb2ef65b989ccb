"""The CLI's read-only commands (``show``, ``approvals``): the ledger alone, no Temporal, no packs.

Kept apart from the stack's commands so that reading a run costs what reading a database
costs, and so that a read never creates a ledger: pointing at a directory without one is an
error.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from agentledger.activities.ledger import Ledger, RunRow
from agentledger.app.config import Settings
from agentledger.app.erasure import erased_run, erased_timeline
from agentledger.app.errors import NotFound
from agentledger.app.render import packet_text, run_table, timeline
from agentledger.app.stack import open_ledger
from agentledger.domain.events import ContextPacketBuilt, RunEvent
from agentledger.domain.fold import project
from agentledger.domain.forks import boundaries

say = print
_CONVERSATION = ("reply_awaited", "user_replied", "conversation_closed")


def where(ledger: Ledger) -> str:
    return ledger.engine.url.render_as_string(hide_password=True)


def print_run(ledger: Ledger, run_id: str) -> int:
    """The timeline and outcome of a run; non-zero when it failed."""
    events = ledger.read(run_id)
    say("\nTimeline (from the ledger)")
    for line in timeline(events):
        say("  " + line)
    if points := boundaries(events):
        shown = ", ".join(f"#{seq}" for seq in points[-8:])
        say(f"\nFork points{' (the latest)' if len(points) > 8 else ''}: {shown}; "
            f"`agentledger fork {run_id} --at SEQ --as PRINCIPAL [--dry]`")  # fmt: skip
    state = project(events)
    for handoff in state.handoffs.values():  # each child's receipts are in its own stream
        say(
            f"\nHandoff {handoff.handoff} ({handoff.status}): child run {handoff.child_run_id}; "
            f"`agentledger show {handoff.child_run_id}`"
        )
    if state.status == "completed" and state.last_answer is not None:
        say(f"\nAnswer: {state.last_answer.answer}")
        say(f"Sources: {', '.join(state.last_answer.supporting_source_ids) or 'none'}")
        return 0
    say(f"\nRun {run_id} is {state.status}.")
    return 0 if state.status != "failed" else 1


async def show(settings: Settings, args: argparse.Namespace) -> int:
    ledger = open_ledger(settings)
    if args.list or not args.run_id:
        return list_runs(ledger, args.limit)
    if (erased := erased_run(ledger, args.run_id)) is not None:
        say(f"\nTimeline (from the ledger; its content was erased in {erased.erasure_id})")
        for line in erased_timeline(ledger, args.run_id):
            say("  " + line)
        return 0
    events = ledger.read(args.run_id)
    if not events:
        raise NotFound(f"no run {args.run_id} in the ledger at {where(ledger)}")
    if args.packets:
        return print_packets(ledger, args.run_id, events, as_json=args.json)
    if args.json:
        for event in events:
            sys.stdout.write(event.model_dump_json() + "\n")
        return 0
    return print_run(ledger, args.run_id)


def list_runs(ledger: Ledger, limit: int) -> int:
    """The most recently updated runs, one line each under a header."""
    rows = ledger.list_runs(limit=limit)
    if not rows:
        say(f"no runs in the ledger at {where(ledger)}")
        return 0
    for line in run_table([(row, waiting_on_customer(ledger, row)) for row in rows]):
        say(line)
    return 0


def waiting_on_customer(ledger: Ledger, row: RunRow) -> bool:
    """A live run whose latest conversation event is its question (or answer) to the customer."""
    if row.status != "running":
        return False
    said = ledger.read_kinds(row.run_id, *_CONVERSATION)
    return bool(said) and said[-1].kind == "reply_awaited"


def print_packets(ledger: Ledger, run_id: str, events: list[RunEvent], *, as_json: bool) -> int:
    """Each packet exactly as its model was sent it; with ``as_json``, one view per line."""
    # Only here: a chat model's messages are written by the provider's own code (httpx and
    # all), which `show --list` and a timeline need not import.
    from agentledger.app import packet_views

    for event in events:
        if not isinstance(event, ContextPacketBuilt):
            continue
        body = ledger.get_packet(event.packet_hash)
        if body is None:
            raise NotFound(f"packet {event.packet_hash} of run {run_id} is missing")
        model = packet_views.model_of(ledger, event.manifest_hash)
        view = packet_views.packet_view(body, model, "restricted")
        if as_json:
            sys.stdout.write(orjson.dumps(view).decode() + "\n")
        else:
            sys.stdout.write(packet_text(view, visible_controls=sys.stdout.isatty()))
    return 0


async def approvals(settings: Settings, args: argparse.Namespace) -> int:
    rows = open_ledger(settings).approvals(status="pending")
    for row in rows:
        say(
            f"{row.run_id}  {row.approval_id}  {row.tool} {orjson.dumps(row.arguments).decode()}"
            f"  requested by {row.requested_by}, expires {row.expires_at:%Y-%m-%d %H:%M}"
        )
    if not rows:
        say("no pending approvals")
    return 0
