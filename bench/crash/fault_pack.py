"""``support_faulty``: the support pack with crash points, for the crash tests and bench.faults.

Fault injection lives here, never in product code. A worker subprocess loads this pack with
``AGENTLEDGER_PACKS=support_faulty=bench.crash.fault_pack:PACK``; the pack keeps the support
pack's contracts, profile and playbook, and only wraps a tool or the model so that the worker
SIGKILLs itself at a named point:

    FAULT_POINT    one of ``CRASH_POINTS`` (unset: no crash; the pack behaves like ``support``)
    FAULT_DIR      a directory of marker files, one per (point, order): each run crashes once
    FAULT_BARRIER  how many runs reach the point before the kill (default 1), so several runs
                   die in one crash and share one recovery

Each run targets its own late-delivered order (``crash_order(i)``), seeded by this pack, so one
run's refund never makes another's order look already refunded.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from weakref import WeakSet

from sqlalchemy import event, insert, select
from sqlalchemy.engine import Connection, Engine

from agentledger.activities.ports import ModelReply, ToolCall, ToolImplementation, ToolOutput
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support import PACK as SUPPORT
from agentledger.packs.support import records
from agentledger.packs.support.playbook import Playbook
from agentledger.packs.support.seed import TENANT

__all__ = ["CRASH_POINTS", "NAME", "ORDERS", "PACK", "crash_order", "request_for"]

NAME = "support_faulty"
ORDERS = 200
CRASH_POINTS = (
    "get_order",  # a read tool, before it reads
    "model_step",  # inside the model call of the run's first step
    "create_refund_before_commit",  # the refund row written, its transaction not yet committed
    "create_refund_after_commit",  # committed in the system of record, receipt not yet returned
    "approval_recorded",  # the ledger committed the approval request; the workflow task has not
)
_BARRIER_WAIT_S = 5.0


def crash_order(i: int) -> str:
    return f"ord_{700_000 + i}"


def request_for(order_id: str) -> str:
    return f"Can I get a refund for order {order_id}? It arrived late."


def crash_here(point: str, key: str) -> None:
    """SIGKILL this worker the first time ``key`` reaches ``point`` (if ``point`` is armed).

    With ``FAULT_ACTION=stall`` the worker instead waits there until ``FAULT_DIR/release``
    exists, so a test can pull the database away while a tool is mid-call.
    """
    if os.environ.get("FAULT_POINT") != point:
        return
    markers = Path(os.environ["FAULT_DIR"])
    marker = markers / f"{point}--{key}"
    if marker.exists():
        return  # this run already died (or stalled) here once: let the retry through
    marker.touch()
    if os.environ.get("FAULT_ACTION") == "stall":
        _wait_for(lambda: (markers / "release").exists(), 60.0)
        return
    # Gather the armed runs at the point, then die: one recovery for all of them. A run that
    # cannot arrive (e.g. queued behind a lock this one holds) crashes on its own later.
    wanted = int(os.environ.get("FAULT_BARRIER", "1"))
    _wait_for(lambda: len(list(markers.glob(f"{point}--*"))) >= wanted, _BARRIER_WAIT_S)
    os.kill(os.getpid(), signal.SIGKILL)


def _wait_for(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


@dataclass(frozen=True)
class CrashingRead:
    inner: ToolImplementation

    @property
    def contract(self):  # type: ignore[no-untyped-def]
        return self.inner.contract

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        crash_here(self.inner.contract.name, str(call.arguments.model_dump().get("order_id")))
        return self.inner.execute(engine, call)

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return self.inner.reconcile(engine, call)


_refund_in_progress = threading.local()
_hooked: WeakSet[Engine] = WeakSet()


def _before_commit(conn: Connection) -> None:
    # Fires before the DBAPI commit: the refund row is written but not yet durable.
    key = getattr(_refund_in_progress, "key", None)
    if key is not None:
        crash_here("create_refund_before_commit", key)


@dataclass(frozen=True)
class CrashingRefund:
    inner: ToolImplementation

    @property
    def contract(self):  # type: ignore[no-untyped-def]
        return self.inner.contract

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        if engine not in _hooked:
            event.listen(engine, "commit", _before_commit)
            _hooked.add(engine)
        order_id = str(call.arguments.model_dump()["order_id"])
        _refund_in_progress.key = order_id
        try:
            output = self.inner.execute(engine, call)
        finally:
            _refund_in_progress.key = None
        crash_here("create_refund_after_commit", order_id)
        return output

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        return self.inner.reconcile(engine, call)


class CrashingPlaybook:
    """The support playbook; the worker dies inside the first model call of a run."""

    def __init__(self) -> None:
        self._inner = Playbook()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        references = packet.working_state.get("references")
        order = references.get("order_id") if isinstance(references, dict) else None
        if packet.step == "choose_next_action" and not packet.working_state.get("verified_facts"):
            crash_here("model_step", str(order))
        return self._inner.decide(packet, profile)


def seed(engine: Engine) -> bool:
    """The support sample data plus ``ORDERS`` late-delivered orders for usr_73."""
    created = SUPPORT.seed(engine)
    with engine.begin() as conn:
        if conn.execute(
            select(records.orders).where(records.orders.c.order_id == crash_order(0))
        ).first():
            return created
        when = datetime(2026, 8, 10, 12, tzinfo=UTC)
        conn.execute(
            insert(records.orders),
            [
                {
                    "order_id": crash_order(i),
                    "tenant_id": TENANT,
                    "customer_id": "usr_73",
                    "status": "delivered",
                    "amount": Decimal("42.50"),
                    "currency": "EUR",
                    "ordered_at": when,
                    "promised_by": when.replace(day=14),
                    "delivered_at": when.replace(day=20),
                    "items": "Desk lamp",
                }
                for i in range(ORDERS)
            ],
        )
    return True


def make_work_order(request: str, principal: Principal) -> WorkOrder:
    return SUPPORT.make_work_order(request, principal).model_copy(update={"pack": NAME})


def install(engine: Engine) -> None:
    """The support tables; with ``approval_recorded`` armed, also a hook on the ledger's engine
    (the one every pack installs into) that commits the approval request and then dies."""
    SUPPORT.install(engine)
    if os.environ.get("FAULT_POINT") == "approval_recorded" and engine not in _hooked:
        event.listen(engine, "before_cursor_execute", _note_approval_request)
        event.listen(engine, "commit", _commit_then_crash)
        _hooked.add(engine)


def _note_approval_request(
    conn: Connection, cursor: object, statement: str, parameters: object, *_: object
) -> None:
    if statement.lstrip().upper().startswith("INSERT INTO APPROVALS"):
        values = parameters.values() if isinstance(parameters, dict) else parameters
        runs = [v for v in values or () if isinstance(v, str) and v.startswith("run_")]  # type: ignore[union-attr]
        conn.info["approval_requested_in"] = runs[0] if runs else "unknown"


def _commit_then_crash(conn: Connection) -> None:
    run_id = conn.info.pop("approval_requested_in", None)
    if run_id is not None:
        conn.connection.dbapi_connection.commit()  # type: ignore[union-attr]
        crash_here("approval_recorded", run_id)


def _wrap(name: str, tool: ToolImplementation) -> ToolImplementation:
    if name == "create_refund":
        return CrashingRefund(tool)
    if name == "get_order":
        return CrashingRead(tool)
    return tool


_PROFILE = SUPPORT.profile.model_copy(
    update={"model": SUPPORT.profile.model.model_copy(update={"provider": "crashing_playbook"})}
)

PACK = Pack(
    name=NAME,
    profile=_PROFILE,
    tools={name: _wrap(name, tool) for name, tool in SUPPORT.tools.items()},
    principals=SUPPORT.principals,
    models={"crashing_playbook": CrashingPlaybook()},
    install=install,
    seed=seed,
    make_work_order=make_work_order,
    policy_version=SUPPORT.policy_version,
)
