"""``agentledger erase`` as a data protection officer runs it, on both backends: a customer's
finished and in-flight runs are cancelled, shredded and their Temporal histories deleted; no byte
of their words stays readable in the database; ``verify`` still checks every erased run's log;
another customer is untouched; bad input is refused by name."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from agentledger.domain.fold import project
from tests._temporal import Harness, gone
from tests.e2e.test_backup import _empty, cli
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal
OTHER = "Where is my parcel ord_5100? It has not arrived."


async def erase(harness: Harness, db: str, *args: str) -> tuple[int, str, str]:
    """The CLI in a thread: the harness's worker shares this event loop, and must keep working
    (the erasure cancels a run it serves)."""
    done = await asyncio.to_thread(cli, harness, "erase", *args, "--database-url", db)
    return done.returncode, done.stdout, done.stderr


def all_text(database_url: str) -> bytes:
    """Every byte the database holds that a reader could get at: the SQLite files themselves;
    on PostgreSQL, every row of every table as text (what a dump holds)."""
    if database_url.startswith("sqlite"):
        base = Path(database_url.removeprefix("sqlite:///"))
        return b"".join(p.read_bytes() for p in base.parent.glob(base.name + "*"))
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            tables = inspect(conn).get_table_names()
            rows = [conn.execute(text(f'SELECT t::text FROM "{t}" t')).scalars() for t in tables]
            return "\n".join(r for found in rows for r in found).encode()
    finally:
        engine.dispose()


async def test_a_customer_is_erased_and_every_erased_run_still_verifies(
    harness: Harness, database_url: str
) -> None:
    parked, done, events = await harness.parked_and_finished(REQUEST)
    answer = project(events).last_answer
    assert answer is not None
    other = await harness.start(OTHER, user="usr_88")
    await harness.until_approval_or_end(other)

    code, _, err = await erase(harness, database_url, "--subject", "usr_73", "--as", "ops_lead_1",
                         "--reason", "art. 17 request")  # fmt: skip
    assert code == 5 and "eraser" in err
    code, out, err = await erase(harness, database_url, "--subject", "usr_73", "--as", "dpo_1",
                           "--reason", "art. 17 request of 2026-12-01")  # fmt: skip
    assert code == 0, err
    assert out.startswith("era_") and "2 run(s) (1 cancelled in flight)" in out, out
    assert f"{done}: matched its Temporal history before" in out

    for run_id in (done, parked):
        checked = cli(harness, "verify", run_id, "--database-url", database_url)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "log intact" in checked.stdout and "dpo_1" in checked.stdout
    shown = cli(harness, "show", done, "--database-url", database_url)
    assert shown.returncode == 0 and "run_completed  (erased; sha256" in shown.stdout
    raw = all_text(database_url)
    assert REQUEST.encode() not in raw and answer.answer.encode() not in raw
    assert other.encode() in raw and OTHER.encode() not in raw  # usr_88's run kept, sealed
    kept = harness.runtime.ledger.get_run(other)
    assert kept is not None and kept.request_text == OTHER and harness.runtime.ledger.read(other)

    again = await erase(
        harness, database_url, "--subject", "usr_73", "--as", "dpo_1", "--reason", "x"
    )
    assert again[0] == 5 and "already erased" in again[2]
    unknown = await erase(
        harness, database_url, "--subject", "usr_999", "--as", "dpo_1", "--reason", "x"
    )
    assert unknown[0] == 4 and "usr_999" in unknown[2]
    back = await harness.start(REQUEST)  # the customer may come back: a new key, a new run
    assert (await harness.until_approval_or_end(back)).status != "failed"
    assert harness.runtime.ledger.read(back)
    if database_url.startswith("sqlite"):  # one backend suffices: the same Temporal server
        assert await gone(harness, done) and await gone(harness, parked)


async def test_a_backup_from_before_an_erasure_is_erased_again_when_restored(
    harness: Harness, database_url: str, tmp_path: Path
) -> None:
    """The backup holds the customer's wrapped key and the ring still opens it: the restore
    erases them again, as the erasure register (outside the ledger) says."""
    parked, done, _ = await harness.parked_and_finished(REQUEST)
    other = await harness.start(OTHER, user="usr_88")
    await harness.until_approval_or_end(other)
    sqlite = database_url.startswith("sqlite")
    path = tmp_path / ("before.db" if sqlite else "before.dump")
    made = cli(harness, "backup", str(path), "--database-url", database_url)
    assert made.returncode == 0, made.stderr
    code, out, err = await erase(harness, database_url, "--subject", "usr_73", "--as", "dpo_1",
                                 "--reason", "art. 17 request")  # fmt: skip
    assert code == 0 and "registered in" in out, out + err

    with _empty(database_url, tmp_path) as target:
        restored = cli(harness, "restore", str(path), "--database-url", target, "--no-verify")
        assert restored.returncode == 0, restored.stdout + restored.stderr
        assert "erased again as" in restored.stdout, restored.stdout
        for run_id in (done, parked):
            checked = cli(harness, "verify", run_id, "--database-url", target)
            assert checked.returncode == 0 and "log intact" in checked.stdout, checked.stdout
        raw = all_text(target)
        assert REQUEST.encode() not in raw
        assert other.encode() in raw  # usr_88 was not erased, so not again: theirs opens
        shown = cli(harness, "show", other, "--database-url", target)
        assert shown.returncode == 0 and OTHER in shown.stdout, shown.stdout + shown.stderr
