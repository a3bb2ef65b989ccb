"""``agentledger new pack`` as a pack author meets it: scaffold, install offline, and the pack runs
through a worker that finds it by its entry point alone; its own tests and lint pass as written.

The pack is installed with ``pip --target`` into a temporary directory that only this test's
processes put on their path, so nothing reaches the project's environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from agentledger.activities.ledger import Ledger
from agentledger.app.devserver import DevServer
from agentledger.domain import events as ev
from agentledger.domain.decisions import Claim
from agentledger.domain.fold import project
from tests.e2e._worker import cli_worker
from tests.e2e.test_cli import CLI, embedded_ledger

PACK = "acme-desk"
REQUEST = "Please close tkt_1001, the export works again."
# Offline: the build backend (setuptools) comes from this environment, nothing from an index.
PIP_INSTALL = ("-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q")

pytestmark = pytest.mark.temporal


def cli(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scaffolded pack's source directory, and the directory it is installed into."""
    root = tmp_path_factory.mktemp("new-pack")
    made = cli(dict(os.environ), "new", "pack", PACK, cwd=root)
    assert made.returncode == 0, made.stderr
    source, installed = root / PACK, root / "site"
    assert f"created pack '{PACK}' in {source}/" in made.stdout
    done = subprocess.run(
        [sys.executable, *PIP_INSTALL, "--target", str(installed), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return source, installed


@pytest.fixture(scope="module")
def env(
    scaffolded: tuple[Path, Path],
    temporal_server: DevServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """The CLI's environment: the test server, a ledger of its own, the installed pack on the
    path (and no AGENTLEDGER_PACKS: the entry point is the only registration)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return {
        **environ,
        "PYTHONPATH": os.pathsep.join([str(scaffolded[1]), environ.get("PYTHONPATH", "")]),
        "AGENTLEDGER_TEMPORAL_ADDRESS": temporal_server.address,
        "AGENTLEDGER_DATA_DIR": str(tmp_path_factory.mktemp("new-pack-data")),
        "AGENTLEDGER_TASK_QUEUE": f"new-pack-{uuid.uuid4().hex[:8]}",
    }


@pytest.fixture(scope="module")
def worker(env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    with cli_worker(env) as process:
        yield process


def test_the_installed_pack_is_listed_by_its_entry_point(env: dict[str, str]) -> None:
    listed = cli(env, "packs", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert rows[PACK]["source"] == "entry point of agentledger-acme-desk 0.1.0"
    assert rows[PACK]["target"] == "acme_desk_pack:PACK"
    assert rows[PACK]["version"] == "0.1.0" and rows[PACK]["error"] is None


@pytest.fixture(scope="module")
def approved_run(env: dict[str, str], worker: subprocess.Popen[str]) -> list[ev.RunEvent]:
    """A run of the scaffolded pack, parked on its approval, refused for the requester and
    approved by its approver, to completion: its events."""
    started = cli(env, "run", PACK, REQUEST, "--user", "acme_desk_customer", "--wait")
    assert started.returncode == 0, (started.stdout, started.stderr)
    run_id = started.stdout.split()[0]
    parked = re.search(r"awaiting approval (\S+): close_ticket (\{.*\})", started.stdout)
    assert parked is not None, started.stdout
    assert json.loads(parked.group(2))["ticket_id"] == "tkt_1001"
    refused = cli(env, "approve", run_id, parked.group(1), "--as", "acme_desk_customer")
    assert refused.returncode == 5, refused.stderr  # a customer is no approver
    granted = cli(env, "approve", run_id, parked.group(1), "--as", "acme_desk_approver")
    assert granted.returncode == 0, granted.stderr
    return _until_completed(env, run_id)


def test_the_scaffolded_pack_runs_to_its_approval_and_closes_the_ticket_once(
    env: dict[str, str], approved_run: list[ev.RunEvent]
) -> None:
    receipts = [e.receipt for e in approved_run if isinstance(e, ev.ToolReceiptRecorded)]
    assert [(r.tool, r.status) for r in receipts] == [
        ("get_ticket", "succeeded"),
        ("close_ticket", "succeeded"),
    ]
    assert [e.kind for e in approved_run if "approval" in e.kind][-1] == "approval_granted"
    assert isinstance(approved_run[-1], ev.RunCompleted)
    answer = project(approved_run).last_answer
    assert answer is not None and answer.answer == "Ticket tkt_1001 is now closed."
    assert answer.claims == (
        Claim(operation_id=receipts[1].operation_id, tool="close_ticket", resource_id="tkt_1001"),
    )
    completed = approved_run[-1]
    assert completed.answer.startswith("Ticket tkt_1001 is now closed.\n\n")
    assert f"- closed ticket tkt_1001 ({receipts[1].receipt_id})" in completed.answer
    with _ledger(env) as ledger, ledger.engine.connect() as db:
        closures = db.execute(text("SELECT ticket_id FROM acme_desk_closures")).all()
        status = db.execute(
            text("SELECT status FROM acme_desk_tickets WHERE ticket_id = 'tkt_1001'")
        ).scalar_one()
    assert [tuple(r) for r in closures] == [("tkt_1001",)] and status == "closed"


def test_schema_prints_what_the_runs_packets_carried(
    env: dict[str, str], approved_run: list[ev.RunEvent]
) -> None:
    with _ledger(env) as ledger:
        packets = {
            e.step: ledger.get_packet(e.packet_hash)
            for e in approved_run
            if isinstance(e, ev.ContextPacketBuilt)
        }
    assert set(packets) == {"look_up", "respond"}
    for step, packet in packets.items():
        shown = cli(env, "schema", step, "--pack", PACK)
        assert shown.returncode == 0, shown.stderr
        assert packet is not None
        assert json.loads(shown.stdout) == packet["output_schema"]["json_schema"]


def test_the_scaffolds_own_tests_lint_and_strict_types_pass(scaffolded: tuple[Path, Path]) -> None:
    source, _ = scaffolded
    # mypy reads agentledger from this checkout (an editable install's import hook hides it).
    env = {**os.environ, "MYPYPATH": str(Path(__file__).resolve().parents[2])}
    for argv in (
        ("-m", "pytest", "-q", "-p", "no:cacheprovider"),
        ("-m", "ruff", "check", "."),
        ("-m", "ruff", "format", "--check", "."),
        ("-m", "mypy", "--cache-dir", str(source.parent / "mypy-cache"), "acme_desk_pack", "tests"),
    ):
        done = subprocess.run(
            [sys.executable, *argv],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        assert argv[1] != "pytest" or " passed" in done.stdout


def _ledger(env: dict[str, str]) -> Ledger:
    return embedded_ledger(env["AGENTLEDGER_DATA_DIR"])


def _until_completed(env: dict[str, str], run_id: str, timeout: float = 120) -> list[ev.RunEvent]:
    deadline = time.monotonic() + timeout
    with _ledger(env) as ledger:
        while (events := ledger.read(run_id)) and project(events).status != "completed":
            assert project(events).status != "failed", [e.kind for e in events]
            assert time.monotonic() < deadline, "the approved run did not complete"
            time.sleep(0.2)
    return list(events)
