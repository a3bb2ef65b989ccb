"""The CLI as a newcomer meets it: the embedded demo twice, then bad input of every kind."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.activities.ledger import KeyWrap, Ledger, Sealer
from agentledger.app.payloads import KeyRing
from bench._stack import free_port

CLI = [sys.executable, "-m", "agentledger.cli"]


def embedded_ledger(data_dir: Path | str, url: str | None = None) -> Ledger:
    """The embedded stack's ledger in ``data_dir`` (or ``url``), opened with the data
    directory's key ring as the CLI opens it (its runs' events are sealed under their subjects'
    keys)."""
    ring = KeyRing.local(Path(data_dir))
    ledger = Ledger.open(url or f"sqlite:///{Path(data_dir) / 'ledger.db'}")
    ledger.seal_with(Sealer(KeyWrap(ring.active, ring.keys)))
    return ledger


def embedded_env_at(data_dir: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment for an embedded stack of its own in ``data_dir``, on free ports."""
    env = {
        **os.environ,
        "AGENTLEDGER_DATA_DIR": str(data_dir),
        "AGENTLEDGER_TEMPORAL_PORT": str(free_port()),
        "AGENTLEDGER_UI_PORT": str(free_port()),
        **extra,
    }
    env.pop("AGENTLEDGER_DATABASE_URL", None)
    env.pop("AGENTLEDGER_TEMPORAL_ADDRESS", None)
    return env


@pytest.fixture(scope="module")
def embedded_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    env = embedded_env_at(tmp_path_factory.mktemp("embedded"))
    yield env
    subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)


def cli(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_the_demo_refunds_once_and_a_rerun_reuses_server_and_data(
    embedded_env: dict[str, str],
) -> None:
    first = cli(embedded_env, "demo")
    assert first.returncode == 0, first.stderr
    assert "Temporal dev server started" in first.stdout
    assert "approving as ops_lead_1" in first.stdout
    assert "Sources: returns-2026-08#late-delivery" in first.stdout
    assert "has been created" in first.stdout

    second = cli(embedded_env, "demo")
    assert second.returncode == 0, second.stderr
    assert "Temporal dev server reusing" in second.stdout
    assert "already been refunded" in second.stdout
    assert "approval_requested" not in second.stdout

    listed = cli(embedded_env, "show", "--list")
    assert listed.returncode == 0 and listed.stdout.count("completed") == 2


def test_show_prints_packets_with_sections_and_omissions(embedded_env: dict[str, str]) -> None:
    run_id = cli(embedded_env, "show", "--list").stdout.splitlines()[1].split()[0]
    shown = cli(embedded_env, "show", run_id, "--packets")
    assert shown.returncode == 0, shown.stderr
    assert "[instructions/" in shown.stdout and "cache key" in shown.stdout


def test_verify_finds_the_ledger_and_the_live_run_agree(embedded_env: dict[str, str]) -> None:
    run_id = cli(embedded_env, "show", "--list").stdout.splitlines()[1].split()[0]
    verified = cli(embedded_env, "verify", run_id)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "matches the live state" in verified.stdout
    as_json = cli(embedded_env, "show", run_id, "--json")
    assert as_json.returncode == 0
    kinds = [line.split('"kind":"')[1].split('"')[0] for line in as_json.stdout.splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_completed"


@pytest.mark.parametrize(
    ("args", "exit_code", "message"),
    [
        (("show", "run_missing"), 4, "no run run_missing"),
        (("approve", "run_missing", "apr_1", "--as", "ops_lead_1"), 4, "no run run_missing"),
        (("approve", "run_missing", "apr_1", "--as", "nobody"), 4, "unknown principal"),
        (("run", "nopack", "hello", "--user", "usr_73"), 2, "unknown pack"),
    ],
)
def test_bad_input_gets_one_line_and_a_nonzero_exit(
    embedded_env: dict[str, str], args: tuple[str, ...], exit_code: int, message: str
) -> None:
    result = cli(embedded_env, *args)
    assert result.returncode == exit_code, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_unreachable_database_is_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(tmp_path)}
    result = cli(
        env,
        "--database-url",
        "postgresql+psycopg://nobody@127.0.0.1:1/none",
        "show",
        "--list",
        timeout=60,
    )
    assert result.returncode == 3
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_unreachable_temporal_server_is_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(tmp_path)}
    env.pop("AGENTLEDGER_DATABASE_URL", None)
    assert cli(env, "seed").returncode == 0
    result = cli(
        env,
        "--temporal-address",
        "127.0.0.1:1",
        "run",
        "support",
        "hello",
        "--user",
        "usr_73",
        timeout=90,
    )
    assert result.returncode == 3, result.stderr
    assert "cannot reach Temporal at 127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def test_docs_add_loads_a_markdown_policy_as_an_approved_revision(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(tmp_path)}
    env.pop("AGENTLEDGER_DATABASE_URL", None)
    policy = Path(__file__).parents[2] / "agentledger/packs/support/policies/returns-2026-08.md"
    assert cli(env, "seed").returncode == 0  # the directory the approver is checked against
    result = cli(
        env,
        "docs",
        "add",
        str(policy),
        "--id",
        "returns-2026-08",
        "--revision",
        "v2",
        "--approve-as",
        "ops_lead_1",
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "returns-2026-08@v2" in result.stdout and "approved by ops_lead_1" in result.stdout
    missing = cli(env, "docs", "add", str(tmp_path / "nope.md"), "--id", "x", "--revision", "1")
    assert missing.returncode == 4 and "no such file" in missing.stderr


def test_reading_or_running_from_a_directory_without_a_ledger_creates_nothing(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(tmp_path / "nothing-here")}
    env.pop("AGENTLEDGER_DATABASE_URL", None)
    for args in (("show", "--list"), ("approvals",), ("run", "support", "hi", "--user", "usr_73")):
        result = cli(env, *args, timeout=60)
        assert result.returncode == 4 and "no ledger at" in result.stderr, (args, result.stderr)
    assert not (tmp_path / "nothing-here").exists()


def test_malformed_arguments_exit_with_usage() -> None:
    result = subprocess.run([*CLI, "approve"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "usage:" in result.stderr
