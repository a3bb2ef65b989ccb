"""A conversation through the CLI, as an operator and a customer would have it: the billing pack
asks which subscription, the customer replies with ``agentledger reply``, a stranger's reply is
refused with its exit code, the lead approves; and ``demo --pack billing`` runs its sample."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.app.devserver import DevServer
from agentledger.domain import events as ev
from tests.e2e._worker import cli_worker
from tests.e2e.test_cli import cli, embedded_env_at, embedded_ledger

pytestmark = pytest.mark.temporal


@pytest.fixture(scope="module")
def env(temporal_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return {
        **environ,
        "AGENTLEDGER_TEMPORAL_ADDRESS": temporal_server.address,
        "AGENTLEDGER_DATA_DIR": str(tmp_path_factory.mktemp("conversation-cli")),
        "AGENTLEDGER_TASK_QUEUE": f"conversation-{uuid.uuid4().hex[:8]}",
    }


@pytest.fixture(scope="module")
def worker(env: dict[str, str]) -> Iterator[None]:
    with cli_worker(env):
        yield


def test_a_conversation_through_the_cli(env: dict[str, str], worker: None) -> None:
    started = cli(
        env, "run", "billing", "Please cancel my subscription.", "--user", "cust_ana", "--wait"
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[0]
    assert "asks: " in started.stdout and "sub_1002" in started.stdout, started.stdout
    assert f'agentledger reply {run_id} "..." --as cust_ana' in started.stdout

    stranger = cli(env, "reply", run_id, "The family plan.", "--as", "cust_ben")
    assert stranger.returncode == 5, (stranger.stdout, stranger.stderr)
    assert "only the run's requester may reply" in stranger.stderr

    replied = cli(env, "reply", run_id, "The family plan, please.", "--as", "cust_ana", "--wait")
    assert replied.returncode == 0, replied.stderr
    parked = re.search(r"awaiting approval (\S+): cancel_subscription (\{.*\})", replied.stdout)
    assert parked is not None and '"sub_1002"' in parked.group(2), replied.stdout

    approved = cli(env, "approve", run_id, parked.group(1), "--as", "billing_lead_1")
    assert approved.returncode == 0, approved.stderr
    with embedded_ledger(env["AGENTLEDGER_DATA_DIR"]) as ledger:
        kinds = [e.kind for e in ledger.read(run_id)]
        refused = [e for e in ledger.read(run_id) if isinstance(e, ev.ReplyRefused)]
    assert kinds.count("user_replied") == 1 and kinds.count("approval_requested") == 1
    assert [r.attempted_by for r in refused] == ["cust_ben"]
    empty = cli(env, "reply", run_id, "  ", "--as", "cust_ana")
    assert empty.returncode == 5, empty.stderr  # empty, or the run is busy: refused either way
    assert "the reply is empty" in empty.stderr or "not waiting" in empty.stderr


def test_demo_runs_the_billing_packs_sample(tmp_path: Path) -> None:
    env = embedded_env_at(tmp_path / "demo")
    try:
        shown = cli(env, "demo", "--pack", "billing")
    finally:
        cli(env, "stop")
    assert shown.returncode == 0, (shown.stdout, shown.stderr)
    assert "approving as billing_lead_1" in shown.stdout
    assert "issue_prorated_credit" in shown.stdout
    assert "the run waits for cust_ben" in shown.stdout
