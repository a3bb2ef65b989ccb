"""Machinery shared by the crash tests and ``bench.faults``: worker subprocesses that are killed
and kept alive, approvals from the inbox, and the checks every crashed run must pass.

Real components only: the worker is ``python -m agentledger.cli worker`` in its own process, so a
SIGKILL loses everything in memory exactly as a crashed host would.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select
from temporalio.client import Client

from agentledger.activities.ledger import ApprovalRow, Ledger
from agentledger.app.identity import Issuer
from agentledger.domain.events import RunEvent
from agentledger.domain.fold import project
from agentledger.domain.principal import Principal
from agentledger.domain.state import ENDED
from agentledger.packs.support import records
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision, RunInput
from bench.crash import fault_pack

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CrashSite:
    """Where a crash scenario runs: a Temporal server, a database, a task queue, a marker dir."""

    address: str
    database_url: str
    task_queue: str
    work_dir: Path

    @property
    def issuer(self) -> Issuer:
        """The issuer the site's workers trust: the local one of their data directory."""
        return Issuer.local(self.work_dir)

    def worker_env(
        self, point: str | None, barrier: int = 1, action: str = "kill"
    ) -> dict[str, str]:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "AGENTLEDGER_TEMPORAL_ADDRESS": self.address,
            "AGENTLEDGER_DATABASE_URL": self.database_url,
            "AGENTLEDGER_TASK_QUEUE": self.task_queue,
            "AGENTLEDGER_DATA_DIR": str(self.work_dir),
            "AGENTLEDGER_PACKS": f"{fault_pack.NAME}=bench.crash.fault_pack:PACK",
            "FAULT_DIR": str(self.work_dir / "markers"),
            "FAULT_BARRIER": str(barrier),
            "FAULT_ACTION": action,
        }
        env.pop("FAULT_POINT", None)
        if point is not None:
            env["FAULT_POINT"] = point
        return env


@dataclass
class WorkerProcess:
    """One worker subprocess, restarted whenever it dies (as a supervisor would)."""

    site: CrashSite
    point: str | None = None
    barrier: int = 1
    action: str = "kill"
    kills: int = 0
    exits: list[int] = field(default_factory=list)
    _proc: subprocess.Popen[bytes] | None = None
    _keeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        (self.site.work_dir / "markers").mkdir(parents=True, exist_ok=True)
        log = open(self.site.work_dir / "worker.log", "ab")  # noqa: SIM115 - child owns it
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "agentledger.cli", "worker"],
            env=self.site.worker_env(self.point, self.barrier, self.action),
            cwd=REPO,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        log.close()

    async def __aenter__(self) -> WorkerProcess:
        self.start()
        self._keeper = asyncio.create_task(self._keep_alive())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def kill(self) -> None:
        """SIGKILL from outside, e.g. while the run waits for an approval."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP: the process stays, frozen (a stalled VM, a debugger, swap death)."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            assert self._proc is not None
            code = self._proc.poll()
            if code is None:
                continue
            self.exits.append(code)
            self.kills += code == -signal.SIGKILL
            self.start()


async def start_run(client: Client, site: CrashSite, principal: Principal, order_id: str) -> str:
    work_order = fault_pack.make_work_order(fault_pack.request_for(order_id), principal)
    run_id = f"run_crash_{order_id}_{os.urandom(3).hex()}"
    await client.start_workflow(
        AgentRunWorkflow.run,
        RunInput(
            run_id=run_id,
            work_order=work_order,
            requester_assertion=site.issuer.start_assertion(work_order, run_id=run_id),
        ),
        id=run_id,
        task_queue=site.task_queue,
    )
    return run_id


async def approve_from_inbox(
    client: Client,
    ledger: Ledger,
    run_id: str,
    approver: Principal,
    *,
    issuer: Issuer,
    timeout: float = 120.0,
) -> bool:
    """Approve the run's pending request as the inbox shows it; needs no live worker to send.

    False when the run ended without asking (the caller's checks then say what went wrong).
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while not (pending := _pending(ledger, run_id)):
        if _ended(ledger, run_id):
            return False
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{run_id} never asked for an approval")
        await asyncio.sleep(0.1)
    row = pending[0]
    decision = ApprovalDecision(
        approval_id=row.approval_id,
        approver_id=approver.user_id,
        approve=True,
        proposal_digest=row.proposal_digest,
        assertion=issuer.approval_assertion(
            approver.user_id,
            run_id=run_id,
            approval_id=row.approval_id,
            digest=row.proposal_digest,
            approve=True,
        ),
    )
    await client.get_workflow_handle(run_id).execute_update(
        AgentRunWorkflow.decide_approval, decision
    )
    return True


def _ended(ledger: Ledger, run_id: str) -> bool:
    try:
        run = ledger.get_run(run_id)
    except Exception:  # the database may be down on purpose
        return False
    return run is not None and run.status in ENDED


def _pending(ledger: Ledger, run_id: str) -> list[ApprovalRow]:
    try:
        return ledger.approvals(status="pending", run_id=run_id)
    except Exception:  # the database may be down on purpose; ask again shortly
        return []


@dataclass(frozen=True)
class RunCheck:
    """What a crashed run must show: completed, one refund, a contiguous log, no duplicates."""

    run_id: str
    status: str
    kinds: tuple[str, ...]
    refund_rows: int
    gaps: int
    duplicate_events: int


def clean(run_id: str, kinds: Sequence[str]) -> RunCheck:
    """What a run without faults shows: ``kinds`` is its event log's kinds."""
    return RunCheck(run_id, "completed", tuple(kinds), refund_rows=1, gaps=0, duplicate_events=0)


def check_run(ledger: Ledger, run_id: str, order_id: str) -> RunCheck:
    events = ledger.read(run_id)
    seqs = [e.seq for e in events]
    gaps = 0 if seqs == list(range(1, len(seqs) + 1)) else 1
    return RunCheck(
        run_id=run_id,
        status=project(events).status if events else "missing",
        kinds=tuple(e.kind for e in events),
        refund_rows=refund_rows(ledger, order_id),
        gaps=gaps,
        duplicate_events=duplicate_events(events),
    )


def duplicate_events(events: list[RunEvent]) -> int:
    """Events recorded twice: the same seq, or the same fact under two seqs."""
    seq_dupes = len(events) - len({e.seq for e in events})
    facts = Counter(_identity(e) for e in events)
    return seq_dupes + sum(n - 1 for key, n in facts.items() if key is not None)


def _identity(e: RunEvent) -> tuple[str, ...] | None:
    data = e.model_dump(mode="json")
    if e.kind in ("run_started", "run_completed", "run_failed"):
        return (e.kind,)
    if e.kind in ("tool_call_authorised", "tool_call_denied"):
        return (e.kind, data["operation_id"])
    if e.kind == "tool_receipt_recorded":
        return (e.kind, data["receipt"]["operation_id"], data["receipt"]["status"])
    if e.kind.startswith("approval_") and e.kind != "approval_attempt_refused":
        return (e.kind, data["approval_id"])
    return None


def refund_rows(ledger: Ledger, order_id: str) -> int:
    with ledger.engine.connect() as conn:
        count: int = conn.execute(
            select(func.count())
            .select_from(records.refunds)
            .where(records.refunds.c.order_id == order_id)
        ).scalar_one()
    return count


async def parked_on_approval(client: Client, run_id: str, timeout: float = 60.0) -> None:
    """Until the run waits on its approval timer. The server records a workflow task's commands
    (here: the timer) only when that task completes, so history, not the worker, is the judge."""
    handle = client.get_workflow_handle(run_id)
    deadline = asyncio.get_running_loop().time() + timeout
    while not any(
        [e.HasField("timer_started_event_attributes") async for e in handle.fetch_history_events()]
    ):
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{run_id} never parked on an approval")
        await asyncio.sleep(0.05)


async def reached(site: CrashSite, point: str, key: str, timeout: float = 60.0) -> None:
    """Until a run reaches a fault point (its marker file appears)."""
    marker = site.work_dir / "markers" / f"{point}--{key}"
    deadline = asyncio.get_running_loop().time() + timeout
    while not marker.exists():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"nothing reached {point} for {key}")
        await asyncio.sleep(0.02)


def release(site: CrashSite) -> None:
    """Let every stalled fault point continue."""
    (site.work_dir / "markers" / "release").touch()
