"""``agentledger backup`` and ``restore`` as an operator runs them, on both backends: a ledger with
a finished and a parked run is copied out, restored into an empty database whose every run is
then checked against Temporal's history, and read models rebuilt; a backup never overwrites, a
restore never merges into a ledger, and a file that is no backup is refused before anything is
written."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from agentledger.activities.ledger import Ledger
from agentledger.domain.fold import project
from bench._faultdb import scratch_database
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


def cli(harness: Harness, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    env["AGENTLEDGER_DATA_DIR"] = str(harness.settings.data_dir)  # its payload key ring
    env["AGENTLEDGER_TEMPORAL_ADDRESS"] = harness.settings.address
    return subprocess.run(
        [sys.executable, "-m", "agentledger.cli", *args], env=env, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


async def test_a_backup_restores_into_an_empty_database_and_every_run_matches_its_history(
    harness: Harness, database_url: str, tmp_path: Path
) -> None:
    parked, done, _ = await harness.parked_and_finished(REQUEST)
    sqlite = make_url(database_url).get_backend_name() == "sqlite"
    path = tmp_path / ("ledger.backup.db" if sqlite else "ledger.dump")

    made = cli(harness, "backup", str(path), "--database-url", database_url)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("backed up 2 runs (") and "payload key ring" in made.stdout
    again = cli(harness, "backup", str(path), "--database-url", database_url)
    assert again.returncode == 5 and "never overwrites" in again.stderr
    into_itself = cli(harness, "restore", str(path), "--database-url", database_url)
    assert into_itself.returncode == 5 and "already holds a ledger" in into_itself.stderr

    with _empty(database_url, tmp_path) as target:
        restored = cli(harness, "restore", str(path), "--database-url", target)
        assert restored.returncode == 0, restored.stdout + restored.stderr
        assert "restored 2 runs" in restored.stdout
        assert "2 runs match Temporal's history, 0 differ, 0 are behind" in restored.stdout
        with Ledger.open(target) as copy, Ledger.open(database_url) as original:
            copy.seal_with(harness.runtime.ledger.sealer)  # the ring that sealed them
            original.seal_with(harness.runtime.ledger.sealer)
            for run_id in (done, parked):
                assert project(copy.read(run_id)) == project(original.read(run_id))
            assert [a.run_id for a in copy.approvals(status="pending")] == [parked]
        rebuilt = cli(harness, "rebuild-read-models", "--run", done, "--database-url", target)
        assert rebuilt.returncode == 0 and "read models rebuilt from" in rebuilt.stdout


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_file_that_is_no_backup_is_refused_before_anything_is_written(
    harness: Harness, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(4096))
    target = tmp_path / "restored" / "ledger.db"
    refused = cli(harness, "restore", str(junk), "--database-url", f"sqlite:///{target}")
    assert refused.returncode == 2 and "is not a ledger backup" in refused.stderr
    assert not target.exists()
    missing = cli(harness, "restore", str(tmp_path / "none.db"), "--database-url",
                  f"sqlite:///{target}")  # fmt: skip
    assert missing.returncode == 2 and "no backup file" in missing.stderr


@contextmanager
def _empty(url: str, folder: Path) -> Iterator[str]:
    """An empty database of the same kind as ``url``: a new SQLite file, or a scratch
    PostgreSQL database on the same server, dropped afterwards."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        yield f"sqlite:///{folder / 'restored' / 'ledger.db'}"
        return
    with scratch_database(parsed.set(database="postgres"), "agentledger_restore") as target:
        yield target
