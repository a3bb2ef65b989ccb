"""A file that is not UTF-8 text is refused in words ("not UTF-8 text (byte 0xe9 at offset 19)"),
not with the Python codec's own message."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from agentledger.cli.main import main

LATIN_1 = "# Retours\n\nRemboursé sous 30 jours.\n".encode("latin-1")


def _said(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTLEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("AGENTLEDGER_DATABASE_URL", raising=False)
    assert main(["seed"]) == 0
    return tmp_path


def _assert_in_words(said: str) -> None:
    assert "not UTF-8 text (byte 0xe9 at offset 19)" in said
    assert "codec" not in said and "invalid continuation byte" not in said


def test_a_policy_file_that_is_not_utf8_is_refused_in_words(data_dir: Path) -> None:
    policy = data_dir / "policy.md"
    policy.write_bytes(LATIN_1)
    code, said = _said(["docs", "add", str(policy), "--id", "returns", "--revision", "v1"])
    assert code == 2
    _assert_in_words(said)


def test_an_eval_suite_file_that_is_not_utf8_is_refused_in_words(data_dir: Path) -> None:
    suite = data_dir / "suite.json"
    suite.write_bytes(b'{"name": "' + LATIN_1 + b'"}')
    code, said = _said(["eval", str(suite)])
    assert code == 2
    assert "not UTF-8 text (byte 0xe9 at offset 29)" in said and "codec" not in said
