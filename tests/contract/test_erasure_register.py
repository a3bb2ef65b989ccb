"""The erasure register re-applies erasures to restored backups: one from before an erasure
loses the subject again; one taken after the subject came back keeps what came back; a register
line that is not one stops the restore by name."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentledger.activities.ledger import ContentErased, Ledger, Sealer, erasure
from agentledger.activities.ledger.erasure_log import erased_run, subject_digest
from agentledger.app.backups import backup, restore
from agentledger.app.erasure_register import entries, reapply, record
from agentledger.app.errors import ConfigError
from bench.factories import RunScript, refund_run
from tests.contract._ring import RING


def _ledger(url: str) -> Ledger:
    opened = Ledger.open(url)
    opened.seal_with(Sealer(RING))
    return opened


def _erase(ledger: Ledger, register: Path) -> None:
    erased = erasure.finish(
        ledger, erasure.begin(ledger, "acme", "usr_73"), by="dpo_1", reason="r", verified={}
    )
    record(register, erased, subject_digest("acme", "usr_73"))


def test_a_backup_from_before_an_erasure_is_erased_again_and_one_from_after_is_not(
    tmp_path: Path,
) -> None:
    register = tmp_path / "identity" / "erasures.jsonl"
    with _ledger(f"sqlite:///{tmp_path / 'live.db'}") as live:
        live.append(refund_run("run-1").events)
        before = backup(str(live.engine.url), tmp_path / "before.db")
        _erase(live, register)
        came_back = RunScript("run-2", start=datetime.now(UTC))
        live.append([came_back.started()])
        after = backup(str(live.engine.url), tmp_path / "after.db")

    old = restore(f"sqlite:///{tmp_path / 'a' / 'l.db'}", before.path, Sealer(RING),
                  entries(register))  # fmt: skip
    assert len(old.erased_again) == 1
    with _ledger(f"sqlite:///{tmp_path / 'a' / 'l.db'}") as restored:
        assert erased_run(restored, "run-1") is not None
        with pytest.raises(ContentErased):
            restored.read("run-1")
        assert reapply(restored, entries(register)) == []  # once is enough

    new = restore(f"sqlite:///{tmp_path / 'b' / 'l.db'}", after.path, Sealer(RING),
                  entries(register))  # fmt: skip
    assert new.erased_again == ()
    with _ledger(f"sqlite:///{tmp_path / 'b' / 'l.db'}") as restored:
        assert restored.read("run-2") == came_back.events  # what came back is kept
    assert oct(register.stat().st_mode & 0o777) == "0o600"


def test_a_register_line_that_is_not_one_is_refused_by_name(tmp_path: Path) -> None:
    register = tmp_path / "erasures.jsonl"
    register.write_text('{"erasure_id": "era_1"}\n')
    with pytest.raises(ConfigError, match=rf"{register}:1 is not an erasure register line"):
        entries(register)
    assert entries(tmp_path / "none.jsonl") == []
