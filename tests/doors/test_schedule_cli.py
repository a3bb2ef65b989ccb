"""``agentledger schedule``: made, listed, paused, resumed and deleted from the command line,
each change journalled; a cron expression that does not parse is one line and exit 2."""

from __future__ import annotations

import contextlib
import io
import uuid
from pathlib import Path

import pytest

from agentledger.activities.doors import ScheduleJournal
from agentledger.activities.ledger import Ledger
from agentledger.app.devserver import DevServer
from agentledger.app.schedules import schedule_id
from agentledger.cli.main import main


def _said(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_server: DevServer) -> Path:
    monkeypatch.setenv("AGENTLEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTLEDGER_TEMPORAL_ADDRESS", temporal_server.address)
    monkeypatch.setenv("AGENTLEDGER_TASK_QUEUE", f"cli-{uuid.uuid4().hex[:8]}")
    monkeypatch.delenv("AGENTLEDGER_DATABASE_URL", raising=False)
    assert _said(["seed"])[0] == 0
    return tmp_path / "data"


def _add(name: str, cron: str) -> list[str]:
    return ["schedule", "add", name, "--pack", "support", "--request", "Weekly order review",
            "--as", "usr_73", "--cron", cron, "--catchup", "1h"]  # fmt: skip


def test_a_schedule_is_made_listed_paused_resumed_and_deleted_with_a_journal(cli: Path) -> None:
    name = f"monday-{uuid.uuid4().hex[:6]}"
    code, out, _ = _said(_add(name, "0 9 * * MON"))
    assert code == 0 and f"schedule {name}: support as usr_73" in out
    assert _said(_add(name, "0 9 * * MON"))[2].count("already exists") == 1
    listed = _said(["schedule", "list"])[1]
    assert any(line.startswith(name) and "next " in line for line in listed.splitlines())
    for verb in ("pause", "resume", "delete"):
        assert _said(["schedule", verb, name])[0] == 0
    assert name not in _said(["schedule", "list"])[1]
    with Ledger.open(f"sqlite:///{cli / 'ledger.db'}") as ledger:
        journal = ScheduleJournal(ledger.engine).history(schedule_id(name))
    assert [c.action for c in journal] == ["created", "paused", "resumed", "deleted"]
    assert journal[0].definition["cron"] == "0 9 * * MON"


def test_a_cron_expression_that_does_not_parse_is_one_line_and_exit_2(cli: Path) -> None:
    code, _, err = _said(_add(f"bad-{uuid.uuid4().hex[:6]}", "61 * * * *"))
    assert code == 2
    assert err.count("\n") == 1 and "Minute is not in range [0-59]" in err


def test_an_unknown_schedule_is_named(cli: Path) -> None:
    code, _, err = _said(["schedule", "pause", "never-made"])
    assert code == 4 and "no schedule never-made" in err
