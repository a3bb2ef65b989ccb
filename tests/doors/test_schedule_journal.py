"""The schedule journal answers which schedules still run as a subject (what an erasure deletes)
from its own entries, not from Temporal's list of schedules, which may lag behind a new one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agentledger.activities.doors import ScheduleJournal
from agentledger.activities.ledger import build_engine

AT = datetime(2026, 12, 7, tzinfo=UTC)


def test_the_schedules_standing_for_a_subject_are_those_made_for_them_and_not_deleted(
    tmp_path: Path,
) -> None:
    journal = ScheduleJournal(build_engine(f"sqlite:///{tmp_path / 'ledger.db'}"))

    def entry(name: str, action: str, principal: str) -> None:
        definition = {"name": name, "principal": principal, "request": "r"}
        journal.record(f"sched-{name}", action, "ops_1", AT, definition)

    entry("nightly", "created", "usr_a")
    entry("weekly", "created", "usr_b")
    entry("hourly", "created", "usr_a")
    entry("nightly", "paused", "usr_a")
    entry("hourly", "deleted", "usr_a")
    entry("again", "created", "usr_a")
    entry("again", "deleted", "usr_a")
    entry("again", "created", "usr_a")  # a name used again after a deletion

    assert journal.standing("usr_a") == ["again", "nightly"]
    assert journal.standing("usr_b") == ["weekly"]
    assert journal.standing("usr_c") == []
