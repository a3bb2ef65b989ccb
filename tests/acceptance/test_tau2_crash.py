"""τ² runs survive a worker SIGKILLed right after a write commits and before its receipt exists.

The worker is a real subprocess (``python -m agentledger.cli worker``) with the τ² packs from
AGENTLEDGER_PACKS; it kills itself after its k-th journal commit, the worst moment to die. A fresh
worker replaces it; every run must still reach τ²'s reference hash with one receipt per write.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.identity import issuer_for
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect
from agentledger.packs.hosted.journal import CRASH_AFTER_WRITES_ENV
from agentledger.packs.tau2 import PACK_TARGETS
from agentledger.packs.tau2.catalog import Domain, domain, gold_actions, tasks
from bench.hosted.driver import drive
from bench.hosted.tau2 import judge, specs
from tests.acceptance.conftest import register_conformance_packs

pytestmark = pytest.mark.temporal

ROOT = Path(__file__).resolve().parents[2]
CRASH_AFTER = 3
"""The worker dies right after its 3rd committed write (counted across the runs it serves)."""


def _with_writes(name: Domain, at_least: int, count: int) -> list[str]:
    writes = domain(name).write_tools
    ids = sorted(tasks(name, "train"), key=int)
    chosen = [t for t in ids if sum(a.tool in writes for a in gold_actions(name, t)) >= at_least]
    return chosen[:count]


def _worker(settings: Settings, crash_after: int | None) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "AGENTLEDGER_PACKS": ",".join(f"{k}={v}" for k, v in PACK_TARGETS.items()),
        "AGENTLEDGER_TEMPORAL_ADDRESS": settings.address,
        "AGENTLEDGER_DATABASE_URL": settings.ledger_url,
        "AGENTLEDGER_TASK_QUEUE": settings.task_queue,
        # The worker pins the data directory's issuer key; the test signs with the same one.
        "AGENTLEDGER_DATA_DIR": str(settings.data_dir),
    }
    env.pop(CRASH_AFTER_WRITES_ENV, None)
    if crash_after is not None:
        env[CRASH_AFTER_WRITES_ENV] = str(crash_after)
    return subprocess.Popen(
        [sys.executable, "-m", "agentledger.cli", "worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def settings(temporal_server: DevServer, tmp_path: Path) -> Iterator[Settings]:
    yield Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        temporal_address=temporal_server.address,
        task_queue=f"crash-{uuid.uuid4().hex[:10]}",
    )


async def _replace_when_killed(
    first: subprocess.Popen[bytes], settings: Settings
) -> subprocess.Popen[bytes]:
    while first.poll() is None:
        await asyncio.sleep(0.1)
    return _worker(settings, crash_after=None)


async def test_a_worker_killed_after_a_committed_write_duplicates_nothing(
    settings: Settings,
) -> None:
    register_conformance_packs()
    runtime = Runtime.open(settings)
    runtime.seed()  # the directory the runs' requesters and approvers are checked against
    client = await connect(settings)
    runs = specs("retail", _with_writes("retail", 2, 3), "approve") + specs(
        "airline", _with_writes("airline", 2, 2), "approve"
    )
    first = _worker(settings, crash_after=CRASH_AFTER)
    replacement = asyncio.ensure_future(_replace_when_killed(first, settings))
    try:
        await drive(client, settings.task_queue, runs, issuer=issuer_for(settings))
        assert first.wait(timeout=5) == -signal.SIGKILL
        outcomes = [judge(runtime.ledger, spec, "approve") for spec in runs]
    finally:
        for proc in (first, *([replacement.result()] if replacement.done() else [])):
            proc.kill()
        replacement.cancel()
        runtime.ledger.engine.dispose()
    assert [f"{o.domain} {o.task_id}: {o.problems}" for o in outcomes if not o.passed] == []
