"""What Temporal holds of a customer, and what sealing it costs, on one embedded dev server.

Two stacks on the same server and ledger backend, one with the payload codec (``app.payloads``)
and one without, drive the same refund run (started, approved, finished) in alternating rounds:

- ``history_plaintext_hits``: the customer's request, order id and user id searched in each
  sealed run's raw history as the server gives it out (its events' bytes, no keys);
  the same count on the clear-text stack is printed beside it, to show the search finds them;
- ``codec_step_overhead``: wall time per step sealed vs clear (target ≤ 1.1), with process CPU
  per step beside it (client, worker and codec share this process; the server is another).

    python -m bench.privacy [--runs 20] [--backend sqlite|postgresql]

- ``runs_backed_up``, ``restore_runs_verified``: the sealed stack's ledger backed up (SQLite's
  online backup, or ``pg_dump``), restored into a new database, each run checked against its
  history.
- ``runs_affected``, ``runs_verified_after_erase``: the customer erased (``app.erasure``) on the
  sealed stack; each erased run's log checked against its erasure record, as ``verify`` does.
- ``ledger_plaintext_hits_after_erase``: then the customer's request words and every answer
  they were given, searched in the raw database files and in a backup made after the erasure
  (on PostgreSQL: a plain-text dump made after it), and their order id in every row of
  agentledger's own tables (0 is the target).
  ``system_of_record_hits_after_erase`` beside it: the order id in the pack's own tables (the
  business's records of the order, which an erasure of agent content leaves to the business).
- ``runs_erased_again_on_restore``: the backup made before the erasure, restored with the
  erasure register (``app.erasure_register``): the runs erased again (equal to
  ``runs_affected``).
- ``history_copies_opened_after_erase``: each run's start input, copied out of Temporal before
  the erasure (as a backup of Temporal's database would hold it), opened after it by a process
  holding the key ring and the database: 0 of ``history_copies``, since the erasure destroyed
  every run's own payload key (``history_copies_opened_before_erase`` beside it: all of them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import time
import uuid
from contextlib import ExitStack, suppress
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from temporalio.api.common.v1 import Payload

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger import _tables as ledger_tables
from agentledger.activities.memory import _tables as memory_tables
from agentledger.activities.retrieval import _tables as retrieval_tables
from agentledger.app.backups import backup, restore
from agentledger.app.devserver import stop_dev_server
from agentledger.app.erasure import erase, erased_check, erased_run
from agentledger.app.erasure_register import entries
from agentledger.app.history import recorded_state
from agentledger.app.payloads import PayloadKeyMissing, payload_codec
from agentledger.domain.fold import project
from agentledger.packs.support.evaluation import fresh_copy
from bench._stack import open_stack, start_dev_server
from bench.harness import Harness
from bench.ledger import postgres_url

REQUEST = "Can I get a refund for order ord_4821? It arrived late."
SECRETS = ("ord_4821", "arrived late", "usr_73")
REGISTER = "erasures.jsonl"


async def _one(stack: Harness) -> tuple[str, float, float]:
    """One refund run, start to end, on a fresh copy of the system of record (untimed); its id,
    wall and CPU milliseconds per step."""
    fresh_copy(stack.runtime.ledger.engine)
    wall, cpu = time.perf_counter(), time.process_time()
    run_id = await stack.start(REQUEST)
    (approval,) = await stack.in_inbox(run_id)
    await stack.decide(run_id, approval.approval_id, "ops_lead_1")
    events = await stack.finish(run_id)
    steps = sum(e.kind == "step_started" for e in events)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return run_id, wall * 1000 / steps, cpu * 1000 / steps


async def _hits(stack: Harness, run_id: str) -> int:
    """The secrets' occurrences in the history's events, as bytes on the wire (payload data
    unencoded: a JSON rendering would hide clear text in base64)."""
    history = await stack.client.get_workflow_handle(run_id).fetch_history()
    raw = b"".join(event.SerializeToString() for event in history.events)
    return sum(raw.count(secret.encode()) for secret in SECRETS)


async def measure(runs: int, backend: str = "sqlite") -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="agentledger-privacy-") as tmp, ExitStack() as dbs:
        root = Path(tmp)

        def database() -> str | None:
            """A fresh database on the backend (``None``: a SQLite ledger in the data dir)."""
            return dbs.enter_context(postgres_url()) if backend == "postgresql" else None

        server = start_dev_server(root / "temporal")
        try:
            stacks = {
                sealed: await open_stack(
                    root / ("sealed" if sealed else "clear"),
                    server.address,
                    database(),
                    f"privacy-{uuid.uuid4().hex[:8]}",
                    payload_codec=sealed,
                )
                for sealed in (True, False)
            }
            result = await _rounds(stacks, runs)
            backed_up, copy = await _backed_up(stacks[True], root, database())
            erased = await _erased(stacks[True], root)
            again = _erased_again(stacks[True], copy, root, database())
            return {"backend": backend, **result, **backed_up, **erased, **again}
        finally:
            stop_dev_server(root / "temporal")


async def _rounds(stacks: dict[bool, Harness], runs: int) -> dict[str, object]:
    per_step: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    hits = {True: 0, False: 0}
    sealed, clear = stacks[True], stacks[False]
    async with sealed.runtime.worker(sealed.client), clear.runtime.worker(clear.client):
        for stack in (sealed, clear):  # warm both before timing
            await _one(stack)
        for k in range(runs):
            for codec in (True, False) if k % 2 == 0 else (False, True):
                run_id, wall, cpu = await _one(stacks[codec])
                per_step[codec].append((wall, cpu))
                hits[codec] += await _hits(stacks[codec], run_id)
    wall = {c: statistics.median(w for w, _ in per_step[c]) for c in per_step}
    cpu = {c: statistics.median(p for _, p in per_step[c]) for c in per_step}
    return {
        "runs": runs,
        "history_plaintext_hits": hits[True],
        "history_plaintext_hits_without_codec": hits[False],
        "step_ms_sealed": round(wall[True], 2),
        "step_ms_clear": round(wall[False], 2),
        "codec_step_overhead": round(wall[True] / wall[False], 3),
        "step_cpu_ms_sealed": round(cpu[True], 2),
        "step_cpu_ms_clear": round(cpu[False], 2),
        "codec_step_cpu_overhead": round(cpu[True] / cpu[False], 3),
    }


async def _backed_up(
    stack: Harness, root: Path, target: str | None
) -> tuple[dict[str, object], Path]:
    """The sealed stack's ledger backed up, restored into a new database (``target``, or a new
    SQLite file), and each restored run's projection checked against its (sealed) history."""
    made = backup(stack.settings.ledger_url, root / ("ledger.dump" if target else "ledger.db"))
    target = target or f"sqlite:///{root / 'restored' / 'ledger.db'}"
    sealer = stack.runtime.ledger.sealer
    restored = restore(target, made.path, sealer)
    verified = 0
    with Ledger.open(target) as copy:
        copy.seal_with(sealer)
        for run_id in restored.run_ids:
            live = await recorded_state(stack.client, run_id)
            verified += project(copy.read(run_id)) == live
    return {"runs_backed_up": made.runs, "restore_runs_verified": verified}, made.path


async def _erased(stack: Harness, root: Path) -> dict[str, object]:
    """Every run here is usr_73's: erase them, check each log, then search for their words."""
    ledger = stack.runtime.ledger
    listed = ledger.list_runs(limit=100_000)
    answers = [r.answer.encode() for r in listed if r.answer]
    copies = [await _started_input(stack, r.run_id) for r in listed]  # as a Temporal backup
    opened_before = await _opening(stack, copies)
    by, register = stack.principal("dpo_1"), root / REGISTER
    done = await erase(
        stack.client, ledger, "usr_73", by=by, reason="bench.privacy", register=register
    )
    checks = [erased_check(ledger, run_id) for run_id in done.runs]
    raw = _stored_bytes(stack.settings.ledger_url, root)
    words = [REQUEST.split("? ")[1].encode(), b"arrived late", *answers]
    ours, pack = _order_id_rows(ledger)
    return {
        "runs_affected": len(done.runs),
        "runs_verified_after_erase": sum(c is not None and c.intact for c in checks),
        "ledger_plaintext_hits_after_erase": sum(raw.count(w) for w in words) + ours,
        "system_of_record_hits_after_erase": pack,
        "history_copies": len(copies),
        "history_copies_opened_before_erase": opened_before,
        "history_copies_opened_after_erase": await _opening(stack, copies),
    }


async def _started_input(stack: Harness, run_id: str) -> Payload:
    history = await stack.client.get_workflow_handle(run_id).fetch_history()
    (started,) = history.events[0].workflow_execution_started_event_attributes.input.payloads
    return started


async def _opening(stack: Harness, copies: list[Payload]) -> int:
    """How many of the copies a process holding the key ring opens (one that never cached the
    runs' keys: a new worker, the API, someone with the ring and the database)."""
    codec = payload_codec(stack.settings)
    assert codec is not None
    opened = 0
    for copy in copies:
        with suppress(PayloadKeyMissing):
            opened += len(await codec.decode([copy]))
    return opened


def _erased_again(stack: Harness, copy: Path, root: Path, target: str | None) -> dict[str, int]:
    """The backup made before the erasure, restored with the erasure register: every run the
    erasure touched is erased again in the restored ledger."""
    target = target or f"sqlite:///{root / 'restored-after' / 'ledger.db'}"
    restored = restore(target, copy, stack.runtime.ledger.sealer, entries(root / REGISTER))
    with Ledger.open(target) as ledger:
        erased = sum(erased_run(ledger, run_id) is not None for run_id in restored.run_ids)
    return {"runs_erased_again_on_restore": erased}


def _stored_bytes(ledger_url: str, root: Path) -> bytes:
    """What a reader of the database gets at: on SQLite, its files and a backup made now; on
    PostgreSQL, a plain-text dump made now (the server's own files hold old row versions until
    ``VACUUM`` reuses their space: only sealed content is safe there, see the README)."""
    url = make_url(ledger_url)
    if url.get_backend_name() == "sqlite":
        copy = backup(ledger_url, root / "ledger.after-erase.db")
        files = Path(url.database or "")
        return b"".join(p.read_bytes() for p in (*files.parent.glob(files.name + "*"), copy.path))
    libpq = url.set(drivername="postgresql").render_as_string(hide_password=False)
    dump = subprocess.run(["pg_dump", "--format=plain", f"--dbname={libpq}"],
                          capture_output=True, check=True)  # fmt: skip
    return dump.stdout


def _order_id_rows(ledger: Ledger) -> tuple[int, int]:
    """Rows naming the order id in agentledger's own tables, and in the pack's. Manifests are
    left out: they freeze the pack's own instructions, whose example names this order."""
    own = {*ledger_tables.metadata.tables, *memory_tables.metadata.tables,
           *retrieval_tables.metadata.tables} - {"manifests"}  # fmt: skip
    hits = {True: 0, False: 0}
    with ledger.engine.connect() as conn:
        for table in inspect(conn).get_table_names():
            rows = conn.execute(text(f'SELECT * FROM "{table}"')).all()
            hits[table in own] += sum("ord_4821" in str(tuple(row)) for row in rows)
    return hits[True], hits[False]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="refund runs per side (default 20)")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the ledgers' backend (postgresql: fresh databases on AGENTLEDGER_TEST_DATABASE_URL's"
        " server, dropped afterwards)",
    )
    args = parser.parse_args()
    result = asyncio.run(measure(args.runs, args.backend))
    print(f"{'':28}{'sealed':>10}{'clear':>10}{'ratio':>8}")
    print(
        f"{'wall ms per step (median)':28}{result['step_ms_sealed']:>10}"
        f"{result['step_ms_clear']:>10}{result['codec_step_overhead']:>8}"
    )
    print(
        f"{'CPU ms per step (median)':28}{result['step_cpu_ms_sealed']:>10}"
        f"{result['step_cpu_ms_clear']:>10}{result['codec_step_cpu_overhead']:>8}"
    )
    print(
        f"{'customer text in history':28}{result['history_plaintext_hits']:>10}"
        f"{result['history_plaintext_hits_without_codec']:>10}"
    )
    print(
        f"backed up {result['runs_backed_up']} runs; restored, "
        f"{result['restore_runs_verified']} match their history"
    )
    print(
        f"erased {result['runs_affected']} runs; {result['runs_verified_after_erase']} verify; "
        f"customer text left: {result['ledger_plaintext_hits_after_erase']} "
        f"(the order in the business's own tables: {result['system_of_record_hits_after_erase']})"
    )
    print(
        f"the backup from before the erasure, restored: {result['runs_erased_again_on_restore']} "
        "runs erased again"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
