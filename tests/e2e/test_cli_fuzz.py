"""Any command line ends in a typed exit: a usage error (2), a refusal or a missing thing with its
own code, or success; never exit 1's "unexpected" and never a traceback. Drawn by hypothesis over
the commands that need no Temporal server, with arguments that are paths, ids, SQL-ish and
path-ish strings, confusables, huge and empty values."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentledger.cli.main import main

# Each command's shape, with ``{}`` where a drawn value goes: the values reach the command
# itself rather than stopping at argparse. Then a few shapeless lines for argparse's own errors.
SHAPES = [
    ["show", "{}"],
    ["show", "{}", "--json"],
    ["show", "{}", "--packets"],
    ["show", "--list"],
    ["schema", "{}"],
    ["schema", "{}", "--pack", "{}"],
    ["packs", "--json"],
    ["token", "issue", "--as", "{}"],
    ["token", "issue", "--as", "{}", "--minutes", "{}"],
    ["token", "jwks"],
    ["docs", "add", "{}", "--id", "{}", "--revision", "{}"],
    ["docs", "add", "{}", "--id", "{}", "--revision", "{}", "--approve-as", "{}"],
    ["seed"],
    ["migrate"],
    ["nonsense", "{}"],
    ["{}", "{}", "{}"],
]
TOKENS = st.one_of(
    st.sampled_from(
        [
            "--json",
            "--list",
            "--packets",
            "--pack",
            "support",
            "choose_next_action",
            "issue",
            "jwks",
            "add",
            "list",
            "--as",
            "--approve-as",
            "ops_lead_1",
            "usr_73",
            "run_missing",
            "'; DROP TABLE events; --",
            "../../etc/passwd",
            "/dev/null",
            "Ｒｕｎ",
            "a\u202eb",
            "",
            "-",
            "--",
            "x" * 5000,
            "--ttl",
            "-1",
            "99999999999999999999",
        ]
    ),
    st.text(max_size=30).filter(lambda t: "\x00" not in t),  # argv cannot carry NUL
)


@pytest.fixture(scope="module")
def offline_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    data_dir = tmp_path_factory.mktemp("cli-fuzz")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTLEDGER_DATA_DIR", str(data_dir))
        patch.delenv("AGENTLEDGER_DATABASE_URL", raising=False)
        patch.delenv("AGENTLEDGER_TEMPORAL_ADDRESS", raising=False)
        yield data_dir


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=st.sampled_from(SHAPES), values=st.lists(TOKENS, min_size=5, max_size=5))
def test_any_offline_command_line_ends_in_a_typed_exit(
    offline_env: Path, shape: list[str], values: list[str]
) -> None:
    drawn = iter(values)
    argv = [next(drawn) if part == "{}" else part for part in shape]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as usage:  # argparse: a usage error, with its message
            code = int(usage.code or 0)
    said = err.getvalue()
    event(f"{' '.join(shape[:2])}: exit {code}")  # --hypothesis-show-statistics: what was reached
    assert code != 1, said  # exit 1 is "unexpected": every expected failure has its own code
    assert "Traceback" not in said
    if code != 0:
        assert said.strip(), f"exit {code} with nothing said"
