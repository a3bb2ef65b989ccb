"""The CLI's read-only commands (``show``, ``approvals``): the ledger alone, no Temporal, no packs.

Kept apart from ``commands`` so that reading a run costs what reading a database costs, and so
that a read never creates a ledger: pointing at a directory without one is an error.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from agentledger.activities.ledger import Ledger, LedgerUnavailable
from agentledger.config import Settings
from agentledger.domain.fold import project
from agentledger.errors import DatabaseUnavailable, NotFound
from agentledger.render import packet_lines, timeline

say = print


def require_ledger(settings: Settings) -> None:
    """Refuse to go on without an existing embedded ledger (``demo``/``seed`` create it)."""
    if settings.database_url is None:
        path = (settings.data_dir / "ledger.db").resolve()
        if not path.exists():
            raise NotFound(
                f"no ledger at {path}; `agentledger demo` or `agentledger seed` creates one, or "
                "pass --data-dir / --database-url"
            )


def open_ledger(settings: Settings) -> Ledger:
    """The configured ledger; the embedded one only if it exists (reads create nothing)."""
    require_ledger(settings)
    try:
        return Ledger.open(settings.ledger_url)
    except LedgerUnavailable as exc:
        hint = "Check AGENTLEDGER_DATABASE_URL / --database-url."
        raise DatabaseUnavailable(f"{exc}. {hint}") from exc


def where(ledger: Ledger) -> str:
    return ledger.engine.url.render_as_string(hide_password=True)


def print_run(ledger: Ledger, run_id: str) -> int:
    """The timeline and outcome of a run; non-zero when it failed."""
    events = ledger.read(run_id)
    say("\nTimeline (from the ledger)")
    for line in timeline(events):
        say("  " + line)
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
        rows = ledger.list_runs(limit=20)
        for row in rows:
            say(f"{row.run_id}  {row.status:<18} {row.principal_id:<10} {row.request_text}")
        if not rows:
            say(f"no runs in the ledger at {where(ledger)}")
        return 0
    events = ledger.read(args.run_id)
    if not events:
        raise NotFound(f"no run {args.run_id} in the ledger at {where(ledger)}")
    if args.json:
        for event in events:
            sys.stdout.write(event.model_dump_json() + "\n")
        return 0
    if args.packets:
        for event in events:
            if event.kind == "context_packet_built":
                packet = ledger.get_packet(event.packet_hash)
                if packet is None:
                    raise NotFound(f"packet {event.packet_hash} of run {args.run_id} is missing")
                for line in packet_lines(packet):
                    say(line)
        return 0
    return print_run(ledger, args.run_id)


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
