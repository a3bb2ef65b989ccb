"""`agentledger token issue --minutes`: a lifetime outside 1..1440 is refused with what is
allowed, not quietly clamped to a token that lives longer or shorter than asked."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from agentledger.cli.main import main


def _issue(minutes: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["token", "issue", "--as", "ops_lead_1", "--minutes", minutes])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTLEDGER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AGENTLEDGER_DATABASE_URL", raising=False)
    assert main(["seed"]) == 0  # ops_lead_1 is in the directory
    return tmp_path


@pytest.mark.parametrize("minutes", ["0", "-5", "1441", "100000"])
def test_a_lifetime_out_of_range_is_refused_not_clamped(seeded: Path, minutes: str) -> None:
    code, out, err = _issue(minutes)
    assert code == 2 and out == ""  # a usage error, and no token
    assert f"--minutes {minutes}" in err and "1 to 1440" in err


@pytest.mark.parametrize("minutes", ["1", "1440"])
def test_a_lifetime_in_range_is_a_token(seeded: Path, minutes: str) -> None:
    code, out, _ = _issue(minutes)
    assert code == 0 and out.count(".") == 2  # a compact JWS
