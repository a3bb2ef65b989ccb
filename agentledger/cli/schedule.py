"""``agentledger schedule add|list|pause|resume|delete``: runs on a calendar (``schedules``).

Only argparse is imported at the top: the parser is built for every command line, the runtime
only once a schedule command runs.
"""

from __future__ import annotations

import argparse
import getpass
import socket
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentledger.app.config import Settings
    from agentledger.app.schedules import ScheduleDefinition, ScheduleSummary

say = print


def schedule_parser(schedule: argparse.ArgumentParser) -> None:
    verbs = schedule.add_subparsers(dest="schedule_command", required=True, metavar="VERB")
    add = verbs.add_parser("add", help="start a pack's run on a calendar, as a principal")
    add.add_argument("name", help="lower case, digits, - or _ (e.g. monday-report)")
    add.add_argument("--pack", required=True, help="the pack whose run to start")
    add.add_argument("--request", required=True, help="the request each run is given")
    add.add_argument(
        "--as", dest="principal", required=True,
        help="the requester (checked against the directory at every firing)",
    )  # fmt: skip
    timing = add.add_mutually_exclusive_group(required=True)
    timing.add_argument("--cron", help='a cron expression, e.g. "0 9 * * MON" (UTC)')
    timing.add_argument("--every", help="an interval instead: 90s, 15m, 1h, 2d")
    add.add_argument(
        "--overlap", choices=("skip", "buffer_one", "allow"), default="skip",
        help="when a firing finds the last run still going (default skip)",
    )  # fmt: skip
    add.add_argument(
        "--catchup", help="fire missed times within this window after an outage (e.g. 1h)"
    )
    verbs.add_parser("list", help="every schedule: timing, requester, next firing, recent runs")
    for verb, text in (("pause", "stop firing"), ("resume", "fire again"),
                       ("delete", "remove (runs it started go on)")):  # fmt: skip
        verbs.add_parser(verb, help=text).add_argument("name")


def operator() -> str:
    """Who made a change from this command line: the OS user on this host (the CLI holds no
    token of its own; the journal says so rather than naming a principal it cannot vouch for)."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


async def schedule(settings: Settings, args: argparse.Namespace) -> int:
    from agentledger.app import schedules
    from agentledger.app.stack import open_ledger
    from agentledger.app.temporal import connect

    if args.schedule_command == "add":
        say(_added(await _add(settings, args)))
        return 0
    ledger = open_ledger(settings)
    client = await connect(settings)
    if args.schedule_command == "list":
        for summary in await schedules.listed(client):
            say(_line(summary))
        return 0
    action = schedules.CHANGES[args.schedule_command]
    await schedules.change(client, ledger, args.name, action, operator(), datetime.now(UTC))
    say(f"schedule {args.name} {action}")
    return 0


async def _add(settings: Settings, args: argparse.Namespace) -> ScheduleDefinition:
    from agentledger.app import schedules
    from agentledger.app.errors import ConfigError, Refused
    from agentledger.app.registry import UnknownPack, get_pack
    from agentledger.app.request_check import request_refusal
    from agentledger.app.stack import principal_of, require_ledger
    from agentledger.app.temporal import connect
    from agentledger.cli._common import open_runtime

    schedules.schedule_id(args.name)  # a bad name refused before anything is opened
    require_ledger(settings)
    runtime = open_runtime(settings)
    try:
        pack = get_pack(args.pack)
    except UnknownPack as exc:
        raise ConfigError(str(exc)) from None
    work_order = pack.make_work_order(args.request, principal_of(runtime.ledger, args.principal))
    if (problem := request_refusal(work_order)) is not None:
        raise Refused(f"work order refused: {problem}")
    definition = schedules.ScheduleDefinition(
        name=args.name, pack=args.pack, request=args.request, principal=args.principal,
        cron=args.cron, every=args.every, overlap=args.overlap, catchup=args.catchup,
        created_by=operator(), created_at=datetime.now(UTC).isoformat(),
    )  # fmt: skip
    client = await connect(settings)
    return await schedules.add(client, runtime.ledger, settings.task_queue, definition, work_order)


def _timing(d: ScheduleDefinition) -> str:
    return f'cron "{d.cron}"' if d.cron else f"every {d.every}"


def _added(d: ScheduleDefinition) -> str:
    return (
        f"schedule {d.name}: {d.pack} as {d.principal}, {_timing(d)}, overlap {d.overlap}"
        f"{f', catch-up {d.catchup}' if d.catchup else ''}; made by {d.created_by}"
    )


def _line(s: ScheduleSummary) -> str:
    d = s.definition
    state = (
        "paused" if s.paused else f"next {s.next_fire:%Y-%m-%d %H:%M:%S}Z" if s.next_fire else "-"
    )
    recent = f"; recent: {', '.join(s.recent_runs[-3:])}" if s.recent_runs else ""
    return f"{d.name}  {d.pack} as {d.principal}  {_timing(d)}  {state}{recent}"
