"""What a newcomer meets when no worker is left (the demo's ended with it): `run --wait` and
`reply --wait` name it within seconds, with what to do and an honest exit code, instead of a
query that waits out its time-outs and ends in an unnamed RPC error; a run that answers prints
its answer, not only "completed"."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from agentledger.app.devserver import DevServer
from agentledger.domain.fold import project
from tests.e2e._worker import cli_worker
from tests.e2e.test_cli import cli, embedded_ledger

pytestmark = pytest.mark.temporal

NAMED_WITHIN = 30.0
"""Far below the ~85 s the old code waited before failing without a name."""


@pytest.fixture
def env(temporal_server: DevServer, tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return {
        **environ,
        "AGENTLEDGER_TEMPORAL_ADDRESS": temporal_server.address,
        "AGENTLEDGER_DATA_DIR": str(tmp_path),
        "AGENTLEDGER_TASK_QUEUE": f"named-{uuid.uuid4().hex[:8]}",
    }


def _answer_of(env: dict[str, str], run_id: str) -> str:
    with embedded_ledger(env["AGENTLEDGER_DATA_DIR"]) as ledger:
        answer = project(ledger.read(run_id)).last_answer
    assert answer is not None
    return answer.answer


def _timed(env: dict[str, str], *args: str) -> tuple[float, str, str, int]:
    began = time.monotonic()
    done = cli(env, *args, timeout=NAMED_WITHIN + 30)
    return time.monotonic() - began, done.stdout, done.stderr, done.returncode


def test_run_wait_after_the_worker_has_ended_says_no_live_worker_polls(
    env: dict[str, str],
) -> None:
    with cli_worker(env):
        answered = cli(env, "run", "support", "Where is order ord_4823?", "--user", "usr_73",
                       "--wait")  # fmt: skip
        assert answered.returncode == 0, answered.stderr
        run_id = answered.stdout.split()[0]
        assert _answer_of(env, run_id) in answered.stdout  # the answer itself, not only a status

    took, out, err, code = _timed(
        env, "run", "support", "Where is order ord_4821?", "--user", "usr_73", "--wait"
    )
    assert code == 3, (out, err)
    assert took < NAMED_WITHIN, took
    assert "no live worker polls task queue" in err, err
    assert "agentledger dev" in err and "Traceback" not in err


def test_reply_wait_after_the_worker_has_ended_says_no_live_worker_polls(
    env: dict[str, str],
) -> None:
    with cli_worker(env):
        asked = cli(env, "run", "billing", "Please cancel my subscription.", "--user", "cust_ana",
                    "--wait")  # fmt: skip
        assert asked.returncode == 0 and "asks: " in asked.stdout, (asked.stdout, asked.stderr)
    run_id = asked.stdout.split()[0]

    took, out, err, code = _timed(
        env, "reply", run_id, "The family plan, please.", "--as", "cust_ana", "--wait"
    )
    assert code == 3, (out, err)
    assert took < NAMED_WITHIN, took
    assert "no live worker polls task queue" in err, err
    assert "Traceback" not in err


def test_a_failed_call_to_temporal_is_a_named_error_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from temporalio.service import RPCError, RPCStatusCode

    from agentledger.cli import main as cli_module

    async def failing(settings: object, args: object) -> int:
        raise RPCError("h2 protocol error", RPCStatusCode.UNKNOWN, b"")

    monkeypatch.setattr(cli_module, "_command", lambda name: failing)
    code = cli_module.main(["approvals"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "the Temporal server failed" in err and "h2 protocol error" in err
    assert "agentledger dev" in err and "unexpected" not in err


def test_approve_after_the_worker_has_ended_says_no_live_worker_polls(
    env: dict[str, str],
) -> None:
    with cli_worker(env):
        parked = cli(env, "run", "support", "Can I get a refund for order ord_4821? It arrived "
                     "late.", "--user", "usr_73", "--wait")  # fmt: skip
        assert parked.returncode == 0 and "awaiting approval" in parked.stdout, parked.stderr
    run_id, approval_id = parked.stdout.split()[0], parked.stdout.split()[3].rstrip(":")

    took, out, err, code = _timed(env, "approve", run_id, approval_id, "--as", "ops_lead_1")
    assert code == 3, (out, err)
    assert took < NAMED_WITHIN, took
    assert "no live worker polls task queue" in err, err
