"""Schedules over Temporal Schedules: each firing starts a run as the schedule's principal, a
requester the directory no longer vouches for gets a recorded refused start, and a cron
expression Temporal cannot parse is a one-line typed error."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, select
from temporalio.service import RPCError

from agentledger.activities.doors import ScheduleJournal
from agentledger.activities.ledger import RunRow
from agentledger.activities.ledger._tables import payload_keys, principals
from agentledger.app import schedules
from agentledger.app.erasure import erase
from agentledger.app.registry import get_pack
from agentledger.app.schedules import InvalidSchedule, ScheduleDefinition
from agentledger.domain.events import RunFailed
from agentledger.domain.workorder import WorkOrder
from agentledger.workflows import SCHEDULED_RUN, ScheduledRunInput
from tests._temporal import Harness

REQUEST = "Where is my order ord_4821?"


def _definition(
    name: str, *, principal: str = "usr_73", **timing: str | None
) -> ScheduleDefinition:
    return ScheduleDefinition(
        name=name, pack="support", request=REQUEST, principal=principal,
        cron=timing.get("cron"), every=timing.get("every"), overlap="allow", catchup=None,
        created_by="tester@ci", created_at=datetime.now(UTC).isoformat(),
    )  # fmt: skip


@pytest.fixture
async def name(harness: Harness) -> AsyncIterator[str]:
    """A fresh schedule name, deleted afterwards (the server is shared by the whole session)."""
    made = f"t-{uuid.uuid4().hex[:10]}"
    yield made
    with contextlib.suppress(RPCError):  # already deleted by the test
        await harness.client.get_schedule_handle(schedules.schedule_id(made)).delete()


def _work_order(harness: Harness, user_id: str) -> WorkOrder:
    return get_pack("support").make_work_order(REQUEST, harness.principal(user_id))


async def _runs_of(harness: Harness, name: str, at_least: int) -> list[RunRow]:
    """The schedule's runs once ``at_least`` of them are in the ledger."""
    prefix = f"run-{schedules.schedule_id(name)}-"
    for _ in range(1200):
        found = [r for r in harness.runtime.ledger.list_runs(500) if r.run_id.startswith(prefix)]
        if len(found) >= at_least:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"only {len(found)} runs of schedule {name} reached the ledger")


async def test_a_schedule_firing_every_few_seconds_starts_runs_as_its_principal(
    harness: Harness, name: str
) -> None:
    definition = _definition(name, every="2s")
    work_order = _work_order(harness, "usr_73")
    queue = harness.settings.task_queue
    await schedules.add(harness.client, harness.runtime.ledger, queue, definition, work_order)

    runs = await _runs_of(harness, name, at_least=2)
    assert {r.principal_id for r in runs} == {"usr_73"}
    assert {r.request_text for r in runs} == {REQUEST}
    (listed,) = [s for s in await schedules.listed(harness.client) if s.definition.name == name]
    assert listed.definition == definition and not listed.paused

    await schedules.change(
        harness.client, harness.runtime.ledger, name, "deleted", "tester@ci", datetime.now(UTC)
    )
    journal = ScheduleJournal(harness.runtime.ledger.engine).history(schedules.schedule_id(name))
    assert [(c.action, c.by) for c in journal] == [
        ("created", "tester@ci"),
        ("deleted", "tester@ci"),
    ]
    assert journal[0].definition["principal"] == "usr_73"
    assert name not in {s.definition.name for s in await schedules.listed(harness.client)}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # about identity, not storage
async def test_a_requester_who_left_the_directory_gets_a_recorded_refused_start(
    harness: Harness, name: str
) -> None:
    leaver = harness.principal("usr_73").model_copy(update={"user_id": f"leaver_{name[2:]}"})
    harness.runtime.ledger.put_principal(leaver)
    work_order = get_pack("support").make_work_order(REQUEST, leaver)
    with harness.runtime.ledger.engine.begin() as conn:  # they leave before the next firing
        conn.execute(delete(principals).where(principals.c.user_id == leaver.user_id))
    definition = _definition(name, principal=leaver.user_id, every="2s")
    queue = harness.settings.task_queue
    await schedules.add(harness.client, harness.runtime.ledger, queue, definition, work_order)

    (run, *_) = await _runs_of(harness, name, at_least=1)
    await harness.client.get_workflow_handle(run.run_id).result()
    events = harness.runtime.ledger.read(run.run_id)
    assert [e.kind for e in events] == ["run_started", "run_failed"]
    failed = events[-1]
    assert isinstance(failed, RunFailed) and failed.reason_code == "preparation_failed"
    assert "not in the directory" in failed.message


async def _fired_by_hand(harness: Harness, schedule_id: str, work_order: WorkOrder) -> str:
    """What anyone who reaches the frontend can do: start ``ScheduledRun`` themselves, naming a
    schedule, with a work order of their own and nobody's signature. Its run's recorded end."""
    firing = f"{schedule_id}-forged-{uuid.uuid4().hex[:6]}"
    fired = harness.client.execute_workflow(
        SCHEDULED_RUN,
        ScheduledRunInput(schedule_id=schedule_id, work_order=work_order),
        id=firing,
        task_queue=harness.settings.task_queue,
    )
    await asyncio.wait_for(fired, 60)  # a firing taken as genuine parks on an approval
    events = harness.runtime.ledger.read(f"run-{firing}")
    assert [e.kind for e in events] == ["run_started", "run_failed"], events
    failed = events[-1]
    assert isinstance(failed, RunFailed) and failed.reason_code == "preparation_failed"
    return failed.message


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # about identity, not storage
async def test_a_firing_of_no_schedule_or_with_another_work_order_is_refused(
    harness: Harness, name: str
) -> None:
    """A schedule's firing carries no requester signature: it runs only a work order the
    ledger's journal holds for a live schedule, exactly."""
    made = _work_order(harness, "usr_73")
    definition = _definition(name, cron="0 3 1 1 *")  # once a year: nothing fires meanwhile
    queue = harness.settings.task_queue
    await schedules.add(harness.client, harness.runtime.ledger, queue, definition, made)
    sid = schedules.schedule_id(name)
    refund = get_pack("support").make_work_order(
        "Can I get a refund for order ord_4821? It arrived late.", harness.principal("usr_73")
    )

    assert "holds no such schedule" in await _fired_by_hand(harness, f"{sid}-none", made)
    assert "another work order" in await _fired_by_hand(harness, sid, refund)
    await schedules.change(
        harness.client, harness.runtime.ledger, name, "deleted", "tester@ci", datetime.now(UTC)
    )
    assert "was deleted" in await _fired_by_hand(harness, sid, made)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("cron", "said"),
    [("61 * * * *", "Minute is not in range"), ("every monday", "5-7 fields")],
)
async def test_a_cron_expression_that_does_not_parse_is_a_one_line_typed_error(
    harness: Harness, name: str, cron: str, said: str
) -> None:
    work_order = _work_order(harness, "usr_73")
    queue = harness.settings.task_queue
    with pytest.raises(InvalidSchedule, match=said) as refused:
        await schedules.add(
            harness.client, harness.runtime.ledger, queue, _definition(name, cron=cron), work_order
        )
    assert "\n" not in str(refused.value)
    assert ScheduleJournal(harness.runtime.ledger.engine).history(schedules.schedule_id(name)) == []


@pytest.mark.parametrize("text", ["0s", "1 hour", "-5m", "1w"])
def test_a_duration_that_is_not_one_is_refused_by_name(text: str) -> None:
    with pytest.raises(InvalidSchedule, match="--every"):
        schedules.duration(text, "--every")


def test_a_schedule_name_that_could_not_be_an_id_is_refused() -> None:
    with pytest.raises(InvalidSchedule, match="lower case"):
        schedules.schedule_id("Monday Report")


async def test_erasing_the_requester_deletes_their_schedule_and_its_firings_keys(
    harness: Harness, name: str
) -> None:
    """No firing starts a run of theirs again, the journal keeps who changed what but not their
    request, and each firing's own payload key (its input held the request) is destroyed."""
    ledger = harness.runtime.ledger
    await schedules.add(
        harness.client, ledger, harness.settings.task_queue,
        _definition(name, principal="usr_88", every="2s"), _work_order(harness, "usr_88"),
    )  # fmt: skip
    fired = await _runs_of(harness, name, at_least=1)

    done = await erase(
        harness.client, ledger, "usr_88", by=harness.principal("dpo_1"), reason="r", register=None
    )

    assert done.schedules == (name,) and done.affected["scheduled_keys"] >= 1
    assert name not in {s.definition.name for s in await schedules.listed(harness.client)}
    journal = ScheduleJournal(ledger.engine).history(schedules.schedule_id(name))
    assert [c.action for c in journal] == ["created", "deleted"]
    assert {c.definition["request"] for c in journal} == {""} and journal[1].by == "dpo_1"
    sid = schedules.schedule_id(name)  # the schedule's input, then each firing's own payloads
    with ledger.engine.connect() as conn:
        keys = dict(conn.execute(select(payload_keys.c.workflow_id, payload_keys.c.wrapped)).all())
    assert keys[sid] is None and fired
    assert all(wrapped is None for workflow, wrapped in keys.items() if workflow.startswith(sid))
