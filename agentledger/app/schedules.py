"""Runs on a calendar, over Temporal Schedules: make, list, pause, resume and delete them.

A schedule's action starts ``ScheduledRun`` (``workflows.scheduled``) with a work order made
now, for the requester as the directory knows them now; each firing's run checks that claim
against the directory again (``prepare_run``), so a requester who left, or lost a role, gets a
recorded refused start, not a run. The definition (pack, request, requester, timing, who made it
and when) is kept in the schedule's memo and appended, with every later change, to the ledger's
``schedule_journal``. Returns values; the CLI prints them.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError, RPCStatusCode

from agentledger.activities.doors import WORK_ORDER_DIGEST, ScheduleJournal
from agentledger.activities.ledger import Ledger
from agentledger.app.errors import ConfigError, NotFound, Refused
from agentledger.domain.workorder import WorkOrder, work_order_digest
from agentledger.workflows import SCHEDULED_RUN, ScheduledRunInput

Change = Literal["paused", "resumed", "deleted"]
CHANGES: dict[str, Change] = {"pause": "paused", "resume": "resumed", "delete": "deleted"}
OVERLAPS: dict[str, ScheduleOverlapPolicy] = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
    "allow": ScheduleOverlapPolicy.ALLOW_ALL,
}
ID_PREFIX = "agentledger-schedule-"
MEMO_KEY = "agentledger_schedule"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class InvalidSchedule(ConfigError):
    """A schedule that cannot be made as given (a cron expression Temporal cannot parse, a bad
    name or duration); exit 2, one line."""


@dataclass(frozen=True)
class ScheduleDefinition:
    name: str
    pack: str
    request: str
    principal: str
    cron: str | None
    every: str | None
    overlap: str
    catchup: str | None
    created_by: str
    created_at: str


@dataclass(frozen=True)
class ScheduleSummary:
    definition: ScheduleDefinition
    paused: bool
    next_fire: datetime | None
    recent_runs: tuple[str, ...]


def duration(text: str, what: str) -> timedelta:
    """``90s``, ``15m``, ``1h``, ``2d``: a positive duration, or ``InvalidSchedule``."""
    match = _DURATION.match(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise InvalidSchedule(f"{what} {text!r} is not a duration such as 90s, 15m, 1h or 2d")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def schedule_id(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidSchedule(
            f"schedule name {name!r}: use lower case letters, digits, - or _ (up to 63)"
        )
    return ID_PREFIX + name


def _spec(definition: ScheduleDefinition) -> ScheduleSpec:
    if (definition.cron is None) == (definition.every is None):
        raise InvalidSchedule("give exactly one of --cron and --every")
    if definition.every is not None:
        return ScheduleSpec(
            intervals=[ScheduleIntervalSpec(every=duration(definition.every, "--every"))]
        )
    return ScheduleSpec(cron_expressions=[definition.cron or ""])


def _schedule(definition: ScheduleDefinition, work_order: WorkOrder, queue: str) -> Schedule:
    sid = schedule_id(definition.name)
    catchup = duration(definition.catchup, "--catchup") if definition.catchup else None
    return Schedule(
        action=ScheduleActionStartWorkflow(
            SCHEDULED_RUN,
            ScheduledRunInput(schedule_id=sid, work_order=work_order),
            id=sid,
            task_queue=queue,
            memo={MEMO_KEY: asdict(definition)},
        ),
        spec=_spec(definition),
        policy=SchedulePolicy(overlap=OVERLAPS[definition.overlap], catchup_window=catchup),
        state=ScheduleState(note=f"made by {definition.created_by} at {definition.created_at}"),
    )


async def add(
    client: Client,
    ledger: Ledger,
    queue: str,
    definition: ScheduleDefinition,
    work_order: WorkOrder,
) -> ScheduleDefinition:
    """Make the schedule (Temporal checks the cron expression), then journal it."""
    sid = schedule_id(definition.name)
    try:
        await client.create_schedule(
            sid, _schedule(definition, work_order, queue), memo={MEMO_KEY: asdict(definition)}
        )
    except ScheduleAlreadyRunningError:
        raise Refused(
            f"schedule {definition.name} already exists; delete it first or choose another name"
        ) from None
    except RPCError as exc:
        raise _named(exc, definition.name) from None
    made = {**asdict(definition), WORK_ORDER_DIGEST: work_order_digest(work_order)}
    ScheduleJournal(ledger.engine).record(
        sid, "created", definition.created_by, datetime.fromisoformat(definition.created_at), made
    )
    return definition


def _named(exc: RPCError, name: str) -> Exception:
    if exc.status == RPCStatusCode.INVALID_ARGUMENT:
        return InvalidSchedule(f"schedule {name}: {exc.message}")
    if exc.status == RPCStatusCode.NOT_FOUND:
        return NotFound(f"no schedule {name}; `agentledger schedule list` shows them")
    return exc


async def listed(client: Client) -> list[ScheduleSummary]:
    """Every schedule this runtime made, by name."""
    found: list[ScheduleSummary] = []
    async for entry in await client.list_schedules():
        if not entry.id.startswith(ID_PREFIX):
            continue
        raw: dict[str, Any] | None = await entry.memo_value(MEMO_KEY, None)
        if raw is None or entry.schedule is None:
            continue
        recent = tuple(
            getattr(action.action, "workflow_id", "") for action in entry.info.recent_actions
        ) if entry.info else ()  # fmt: skip
        upcoming = entry.info.next_action_times if entry.info else []
        found.append(
            ScheduleSummary(
                definition=ScheduleDefinition(**raw),
                paused=entry.schedule.state.paused,
                next_fire=upcoming[0] if upcoming else None,
                recent_runs=tuple(f"run-{firing}" for firing in recent if firing),
            )
        )
    return sorted(found, key=lambda s: s.definition.name)


async def change(
    client: Client,
    ledger: Ledger,
    name: str,
    action: Change,
    by: str,
    at: datetime,
) -> None:
    """Pause, resume or delete a schedule, journalled with who and when (runs it started go on)."""
    sid = schedule_id(name)
    handle = client.get_schedule_handle(sid)
    note = f"{action} by {by} at {at.isoformat()}"
    try:
        definition = await handle.describe()
        if action == "paused":
            await handle.pause(note=note)
        elif action == "resumed":
            await handle.unpause(note=note)
        else:
            await handle.delete()
    except RPCError as exc:
        raise _named(exc, name) from None
    memo = await definition.memo_value(MEMO_KEY, {})
    ScheduleJournal(ledger.engine).record(sid, action, by, at, memo)
