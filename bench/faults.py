"""Fault harness: the refund run under crashes and outages, several runs per crash point, on
each ledger backend; then the protocol's state machine and its model.

Each crash point gets a fresh worker subprocess (``python -m agentledger.cli worker`` with the
fault pack from ``bench/crash``), N concurrent runs on N distinct late orders, one disruption
shared by all N, and a supervisor that restarts the worker. The disruptions hit the worker
(SIGKILL at each point of the step; SIGSTOP for longer than the activity's timeout), the
Temporal server (SIGKILL and restart) and the database (PostgreSQL taken down). Afterwards every
run is checked: completed, exactly one refund row, a contiguous log, no duplicate events, and
the same event kinds as a run without faults (the ``none`` row). Runs still unfinished after the
deadline (and the grace while they progress) are named stuck or slow, terminated, and counted as
not completed. The matrix runs on SQLite and on PostgreSQL.

Then ``bench.protocol_machine`` explores interleavings (runs, decisions by anyone, forgeries,
worker kills, server restarts) for ``--examples`` examples, and spin checks the approval
protocol's model over every interleaving (``bench.protocol``).

    python -m bench.faults [--runs 3] [--ledgers sqlite,postgres] [--database-url URL]
                           [--points a,b,...] [--examples 10]

Prints a table, then one JSON line with runs, completed, refund_rows, expected_refund_rows,
duplicate_events, completed_late, stuck_runs, slow_runs, incomplete_runs (each run not completed
and what it was doing: ``bench.crash.verdicts``), crash_points, ledgers (and per-point detail),
state_machine_examples, state_machine_violations, spin_states and spin_errors. A run still
recovering at its point's deadline is given up to twice as long again while it progresses.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url
from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer, stop_dev_server
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect
from agentledger.domain.principal import Principal
from bench import protocol, protocol_machine
from bench._faultdb import postgres_database
from bench._stack import start_dev_server
from bench.crash import crashkit, fault_pack, outages
from bench.crash.crashkit import CrashSite, RunCheck, WorkerProcess
from bench.crash.verdicts import Verdict
from bench.crash.verdicts import settle as verdicts_of

_OUTAGE_SECONDS = 6.0
_STOPPED_SECONDS = 15.0  # past get_order's 10 s start-to-close timeout


@dataclass
class Bench:
    data_dir: Path
    server: DevServer
    database_url: str
    ledger: Ledger
    client: Client
    server_dir: Path
    """The server's own data: a restart must find its runs there."""
    next_order: int = 0
    baseline: tuple[str, ...] = ()


@dataclass
class Point:
    """A crash point: how the fault pack is armed and what happens from outside."""

    name: str
    disrupt: Callable[[Bench, CrashSite, WorkerProcess, list[str], list[str]], Awaitable[None]]
    fault: str | None = None
    action: str = "kill"
    # Long enough for one lost model step (its 60 s start-to-close timeout) to be retried.
    deadline: float = 90.0
    needs_postgres: bool = False
    approve_after: bool = False  # hold approvals until the disruption is over


async def _nothing(*_: object) -> None:
    return None


async def _kill_when_parked(
    b: Bench, site: CrashSite, worker: WorkerProcess, runs: list[str], orders: list[str]
) -> None:
    for run_id in runs:
        await crashkit.parked_on_approval(b.client, run_id)
    worker.kill()


async def _restart_server(
    b: Bench, site: CrashSite, worker: WorkerProcess, runs: list[str], orders: list[str]
) -> None:
    while not all(b.ledger.last_seq(r) >= 5 for r in runs):  # past the first tool call
        await asyncio.sleep(0.01)
    b.server = await outages.crash_and_restart_server(b.server, b.server_dir)


async def _stop_worker(
    b: Bench, site: CrashSite, worker: WorkerProcess, runs: list[str], orders: list[str]
) -> None:
    """SIGSTOP the worker inside get_order for longer than the call's timeout: the server times
    the attempts out and retries them, and the frozen process wakes to finish stale ones."""
    for order in orders:
        await crashkit.reached(site, "get_order", order)
    worker.pause()
    crashkit.release(site)
    await asyncio.sleep(_STOPPED_SECONDS)
    worker.resume()


async def _database_outage(
    b: Bench, site: CrashSite, worker: WorkerProcess, runs: list[str], orders: list[str]
) -> None:
    for order in orders:  # every run is inside get_order, stalled before its read
        await crashkit.reached(site, "get_order", order)
    url = make_url(b.database_url)
    assert url.database is not None
    with outages.database_outage(url.set(database="postgres"), url.database):
        crashkit.release(site)
        await asyncio.sleep(_OUTAGE_SECONDS)


POINTS = (
    Point("none", _nothing),
    Point("get_order", _nothing, fault="get_order"),
    Point("model_step", _nothing, fault="model_step", deadline=150.0),
    Point("create_refund", _nothing, fault="create_refund_before_commit"),
    Point("after_commit_before_receipt", _nothing, fault="create_refund_after_commit"),
    Point("approval_just_requested", _nothing, fault="approval_recorded"),
    Point("approval_parked", _kill_when_parked, approve_after=True),
    Point("worker_stopped", _stop_worker, "get_order", "stall"),
    Point("temporal_server_restart", _restart_server),
    Point("database_outage", _database_outage, "get_order", "stall", needs_postgres=True),
)


@dataclass
class PointResult:
    name: str
    checks: list[RunCheck] = field(default_factory=list)
    kills: int = 0
    seconds: float = 0.0
    incomplete: list[Verdict] = field(default_factory=list)
    """Every run not completed, with what it was doing: ``slow`` (recovering when the bench
    gave up), ``stuck``, ``parked`` (waiting on a person) or ``ended``."""
    late: int = 0
    """Runs that completed only after the point's deadline, while they still progressed."""

    def row(self, baseline: tuple[str, ...]) -> dict[str, object]:
        return {
            "crash_point": self.name,
            "runs": len(self.checks),
            "completed": sum(c.status == "completed" for c in self.checks),
            "refund_rows": sum(c.refund_rows for c in self.checks),
            "expected_refund_rows": len(self.checks),
            "duplicate_events": sum(c.duplicate_events for c in self.checks),
            "log_gaps": sum(c.gaps for c in self.checks),
            "same_as_no_fault": sum(c.kinds == baseline for c in self.checks),
            "completed_late": self.late,
            "stuck": sum(v.verdict == "stuck" for v in self.incomplete),
            "slow": sum(v.verdict == "slow" for v in self.incomplete),
            "worker_kills": self.kills,
            "seconds": round(self.seconds, 1),
            "incomplete": [v.row() for v in self.incomplete],
        }


async def run_point(b: Bench, point: Point, n: int) -> PointResult:
    site = CrashSite(
        b.server.address,
        b.database_url,
        f"faults-{point.name}-{uuid.uuid4().hex[:6]}",
        b.data_dir / point.name,
    )
    orders = [fault_pack.crash_order(b.next_order + i) for i in range(n)]
    b.next_order += n
    customer, approver = b.ledger.get_principal("usr_73"), b.ledger.get_principal("ops_lead_1")
    assert customer is not None and approver is not None
    started = time.perf_counter()
    worker = WorkerProcess(site, point=point.fault, barrier=n, action=point.action)
    async with worker:
        runs = [await crashkit.start_run(b.client, site, customer, o) for o in orders]
        disrupted = asyncio.Event()
        if not point.approve_after:
            disrupted.set()
        finishing = [asyncio.create_task(_finish(b, site, r, approver, disrupted)) for r in runs]
        await point.disrupt(b, site, worker, runs, orders)
        disrupted.set()
        _, unfinished = await asyncio.wait(finishing, timeout=point.deadline)
        # Past the deadline, a run still recovering gets more time (a worker killed once per
        # run behind one lock recovers run after run); a stuck one is named, not waited for.
        verdicts = await verdicts_of(b.client, runs, hard_limit=2 * point.deadline)
        late = sum(task.done() for task in unfinished)
        for task in unfinished:
            task.cancel()
        await _terminate_unfinished(b.client, runs)
    result = PointResult(point.name, kills=worker.kills, seconds=time.perf_counter() - started)
    result.checks = [crashkit.check_run(b.ledger, r, o) for r, o in zip(runs, orders, strict=True)]
    result.incomplete = [v for v in verdicts if v.verdict != "completed"]
    result.late = late
    return result


async def _finish(
    b: Bench, site: CrashSite, run_id: str, approver: Principal, disrupted: asyncio.Event
) -> None:
    await disrupted.wait()
    # A refused approval or a failed run is counted by the checks afterwards, not raised here.
    with contextlib.suppress(Exception):
        await crashkit.approve_from_inbox(b.client, b.ledger, run_id, approver, issuer=site.issuer)
    with contextlib.suppress(Exception):
        await b.client.get_workflow_handle(run_id).result()


async def _terminate_unfinished(client: Client, runs: list[str]) -> None:
    for run_id in runs:
        handle = client.get_workflow_handle(run_id)
        try:
            status = (await handle.describe()).status
            if status is not None and status.name == "RUNNING":
                await handle.terminate("fault bench deadline")
        except Exception:  # best effort: the run is already recorded as not completed
            pass


def _print(rows: list[dict[str, object]]) -> None:
    columns = [c for c in rows[0] if c != "incomplete"]
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        for run in row["incomplete"]:  # type: ignore[attr-defined]
            print(
                f"  not completed: {row['crash_point']} {run['run_id']}: {run['verdict']}, "
                f"{run['detail']}"
            )


async def main(
    runs: int, ledgers: list[str], database_url: str | None, only: set[str] | None
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="agentledger-faults-") as tmp:
        data_dir = Path(tmp)
        server = start_dev_server(data_dir / "temporal")
        rows: list[dict[str, object]] = []
        try:
            for ledger in ledgers:
                with postgres_database(database_url if ledger == "postgres" else "sqlite") as url:
                    if ledger == "postgres" and url is None:
                        raise SystemExit("--ledgers postgres: no PostgreSQL answers")
                    done, server = await _all_points(
                        data_dir / ledger, data_dir / "temporal", server, url or "", runs, only
                    )
                    rows += [{"ledger": ledger, **row} for row in done]
        finally:
            stop_dev_server(data_dir / "temporal")
    return _summary(rows)


async def _all_points(
    data_dir: Path,
    server_dir: Path,
    server: DevServer,
    url: str,
    runs: int,
    only: set[str] | None,
) -> tuple[list[dict[str, object]], DevServer]:
    """Every crash point on one ledger; the server as the points left it (one restarts it)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    url = url or f"sqlite:///{data_dir / 'ledger.db'}"
    runtime = Runtime.open(Settings(data_dir=data_dir, database_url=url))
    runtime.seed()
    fault_pack.seed(runtime.ledger.engine)
    client = await connect(
        Settings(data_dir=data_dir, temporal_address=server.address, database_url=url)
    )
    b = Bench(data_dir, server, url, runtime.ledger, client, server_dir)
    postgres = url.startswith("postgresql")
    results = []
    for point in POINTS:
        if (only and point.name not in only and point.name != "none") or (
            point.needs_postgres and not postgres
        ):
            continue
        result = await run_point(b, point, runs)
        if point.name == "none":
            b.baseline = result.checks[0].kinds
        results.append(result)
        print(f"· {point.name} ({url.split(':')[0]}): done in {result.seconds:.1f}s", flush=True)
    rows = [r.row(b.baseline) for r in results]
    runtime.ledger.engine.dispose()
    return rows, b.server


def _summary(rows: list[dict[str, object]]) -> dict[str, object]:
    _print(rows)
    crash_rows = [r for r in rows if r["crash_point"] != "none"]

    def total(key: str) -> int:
        return sum(int(r[key]) for r in crash_rows)  # type: ignore[call-overload]

    return {
        "runs": total("runs"),
        "completed": total("completed"),
        "refund_rows": total("refund_rows"),
        "expected_refund_rows": total("expected_refund_rows"),
        "duplicate_events": total("duplicate_events"),
        "log_gaps": total("log_gaps"),
        "same_as_no_fault": total("same_as_no_fault"),
        "completed_late": total("completed_late"),
        "stuck_runs": total("stuck"),
        "slow_runs": total("slow"),
        "incomplete_runs": [v for r in crash_rows for v in r["incomplete"]],  # type: ignore[attr-defined]
        "crash_points": sorted({str(r["crash_point"]) for r in crash_rows}),
        "ledgers": sorted({str(r["ledger"]) for r in crash_rows}),
        "per_point": crash_rows,
    }


async def explore_protocol(examples: int) -> tuple[int, int]:
    """The state machine's examples run and violations found (its shrunk counterexample is
    printed); a violation is a finding, not a crash of the bench."""
    with tempfile.TemporaryDirectory(prefix="agentledger-machine-") as tmp:
        try:
            explored = await protocol_machine.explore(
                Path(tmp), f"sqlite:///{tmp}/ledger.db", examples=examples, steps=12
            )
        except Exception as exc:  # hypothesis raises the falsifying example's failure
            print(f"state machine: VIOLATION {type(exc).__name__}: {exc}")
            return examples, 1
        print(explored.line())
        return explored.examples, 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="concurrent runs per crash point")
    parser.add_argument(
        "--ledgers", default="sqlite,postgres", help="ledger backends, in order (sqlite,postgres)"
    )
    parser.add_argument(
        "--database-url", help="PostgreSQL admin URL (a scratch database is created on it)"
    )
    parser.add_argument("--points", help="comma-separated subset of crash points")
    parser.add_argument(
        "--examples",
        type=int,
        default=10,
        help="state machine examples (at most 100: two late orders each)",
    )
    args = parser.parse_args()
    only = set(args.points.split(",")) if args.points else None
    ledgers = [ledger.strip() for ledger in args.ledgers.split(",")]
    if unknown := set(ledgers) - {"sqlite", "postgres"}:
        parser.error(f"--ledgers: no backend {', '.join(sorted(unknown))}")
    figures = asyncio.run(main(args.runs, ledgers, args.database_url, only))
    examples, violations = asyncio.run(explore_protocol(args.examples))
    # Beside the crash matrix, the protocol model over every interleaving (bench.protocol).
    model = protocol.check()
    print(f"protocol model: {model.states:,} states, {model.errors} errors ({model.seconds} s)")
    print(
        json.dumps(
            {
                **figures,
                "state_machine_examples": examples,
                "state_machine_violations": violations,
                "spin_states": model.states,
                "spin_errors": model.errors,
            }
        )
    )
