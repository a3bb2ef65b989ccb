"""Every eval input that cannot run is refused before a run starts, with a typed one-line error
and an exit code that says which kind (no Temporal server is reachable here: none is needed).
Called in-process through ``agentledger.cli.main.main``, the function the console script runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentledger.cli.main import main
from tests.eval.test_eval_command import GENEROUS, TIGHT, _suite

UNREACHABLE = "127.0.0.1:9"


@pytest.fixture(autouse=True)
def _no_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A data directory of the test's own and a Temporal address nothing listens on."""
    monkeypatch.setenv("AGENTLEDGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTLEDGER_TEMPORAL_ADDRESS", UNREACHABLE)
    monkeypatch.delenv("AGENTLEDGER_DATABASE_URL", raising=False)


def _write(tmp_path: Path, name: str, content: object) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], suite: str, *configs: str) -> tuple[int, str]:
    code = main(["eval", suite, *(a for c in configs for a in ("--manifest", c))])
    out, err = capsys.readouterr()
    assert out == ""  # nothing ran, nothing was started
    assert err.startswith("agentledger: ") and err.count("\n") == 1  # one line
    return code, err


def test_an_unknown_suite_is_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tight = _write(tmp_path, "tight.toml", TIGHT)
    code, err = _run(capsys, "no-such-suite", tight, _write(tmp_path, "g.json", GENEROUS))
    assert code == 4
    assert "no eval suite 'no-such-suite'" in err and "support" in err


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"pack": "no-such-pack"}, "unknown pack 'no-such-pack'"),
        ({"cases": [{"case_id": "x", "user": "usr_73", "request": "hi",
                     "expect": {"receipts": [{"tool": "wire_money"}]}}]},
         "names tools ['wire_money']"),
        ({"cases": [{"case_id": "x", "user": "usr_73", "request": "hi", "fixture": "flood"}]},
         "names fixture 'flood'"),
        ({"cases": [{"case_id": "x", "colour": "red"}]}, "colour"),
        ({"cases": [{"case_id": "x", "user": "nobody", "request": "hi"}]},
         "asks as 'nobody', who is not in pack support's directory"),
    ],
    ids=["unknown-pack", "unknown-tool", "unknown-fixture", "unknown-field", "unknown-user"],
)  # fmt: skip
def test_a_suite_naming_what_its_pack_lacks_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], expected: str
) -> None:
    suite = str(_suite(tmp_path, ("late_delivery",), **changes))
    tight = _write(tmp_path, "tight.toml", TIGHT)
    code, err = _run(capsys, suite, tight, _write(tmp_path, "g.json", GENEROUS))
    assert code == 2
    assert expected in err
    assert not list((tmp_path / "data").glob("evals/*"))  # refused: no eval left behind


def test_a_configuration_cannot_grant_a_tool_its_pack_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wider = {**GENEROUS, "overrides": {"tool_grants": ["get_order", "wire_money"]}}
    code, err = _run(
        capsys, "support", _write(tmp_path, "t.toml", TIGHT), _write(tmp_path, "w.json", wider)
    )
    assert code == 2
    assert "['wire_money'] are not granted" in err and "can only narrow" in err


def test_two_configurations_that_differ_in_nothing_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = {
        "name": "again",
        "pack": "support",
        "overrides": {"context": {"sections": {"evidence": 150}}},
    }
    code, err = _run(
        capsys, "support", _write(tmp_path, "t.toml", TIGHT), _write(tmp_path, "s.json", same)
    )
    assert code == 7
    assert "'tight-context' and 'again' differ in nothing" in err


@pytest.mark.parametrize(
    ("configs", "expected"),
    [
        (("t.toml",), "exactly two configurations"),
        (("t.toml", "t.toml"), "both configurations are called 'tight-context'"),
        (("t.toml", "bad.json"), "configuration"),
        (("t.toml", "billing.json"), "is for pack 'billing'"),
    ],
    ids=["one", "same-name", "unreadable", "other-pack"],
)
def test_configuration_files_that_cannot_be_compared_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], configs: tuple[str, ...], expected: str
) -> None:
    _write(tmp_path, "t.toml", TIGHT)
    _write(tmp_path, "bad.json", "{not json")
    _write(tmp_path, "billing.json", {**GENEROUS, "pack": "billing"})
    code, err = _run(capsys, "support", *(str(tmp_path / c) for c in configs))
    assert code == 2
    assert expected in err
