"""`agentledger run` refuses an empty request and one no step can hold before it reaches any
server, naming the limit, as the API does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentledger.domain.request_limit import MAX_REQUEST_CHARS
from tests.e2e.test_cli import cli


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    env = {
        **environ,
        "AGENTLEDGER_DATA_DIR": str(tmp_path_factory.mktemp("requests")),
        "AGENTLEDGER_TEMPORAL_ADDRESS": "127.0.0.1:9",  # nothing listens: nothing may reach it
    }
    assert cli(env, "seed").returncode == 0
    return env


@pytest.mark.parametrize("request_text", ["", "   "])
def test_an_empty_request_is_refused_by_the_cli(env: dict[str, str], request_text: str) -> None:
    done = cli(env, "run", "support", request_text, "--user", "usr_73")
    assert done.returncode == 5, (done.stdout, done.stderr)
    assert "the request is empty" in done.stderr and done.stdout == ""


def test_a_request_too_long_is_refused_with_the_real_limit(env: dict[str, str]) -> None:
    done = cli(env, "run", "support", "x " * 10_000, "--user", "usr_73")
    assert done.returncode == 5, (done.stdout, done.stderr)
    assert "too long for pack support" in done.stderr and "at most 1000" in done.stderr
    assert f"about {MAX_REQUEST_CHARS} characters" in done.stderr
    assert Path(env["AGENTLEDGER_DATA_DIR"], "ledger.db").exists() and done.stdout == ""
