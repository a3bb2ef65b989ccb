"""Erasing a subject (``agentledger erase --subject S --as P --reason R``, ``POST
/api/subjects/{subject}/erasure``): their runs cancelled, content shredded, history deleted.

In order, so that nothing is half-erased:

1. ``activities.ledger.erasure.begin``: the subject's key is marked ``erasing``; from then on no
   run of theirs starts (one started meanwhile is refused, never half-erased, and noted:
   ``activities.ledger.refusals``), while the runs already stored may still record how they end.
2. Their schedules are deleted (no firing starts a run of theirs again) and their requests
   blanked in the schedule journal; their runs in flight are cancelled (Temporal cancellation:
   each records how it ended); the runs refused meanwhile, and the schedule firings that started
   their runs, are waited for to close; each run's ledger projection is compared with its
   Temporal history, as ``verify`` does.
3. ``activities.ledger.erasure.finish``: the ledger's content is shredded, every payload key of
   theirs destroyed, and the erasure recorded, in the ledger and in the erasure register outside
   it (``app.erasure_register``).
4. Each of those workflows' Temporal history is deleted: the server holds no byte of it any more.

Erasing is resumable: a second ``erase`` after an interrupted one finishes it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from agentledger.activities.doors import ScheduleJournal
from agentledger.activities.ledger import ContentErased, Ledger, erasure, erasure_log, refusals
from agentledger.activities.ledger.erasure_log import ErasedRun, subject_digest
from agentledger.app import erasure_register, schedules
from agentledger.app.errors import NotFound, Refused
from agentledger.app.history import recorded_state
from agentledger.domain.fold import project
from agentledger.domain.principal import Principal
from agentledger.workflows import SCHEDULED_RUN

__all__ = [
    "ERASER_ROLE", "ContentErased", "ErasedCheck", "Erasure", "erase", "erased_check",
    "erased_run", "erased_timeline",
]  # fmt: skip

ERASER_ROLE = "eraser"
CANCEL_WAIT_SECONDS = 30.0
MAX_REASON = 500


@dataclass(frozen=True)
class ErasedCheck:
    """An erased run's log against what its erasure recorded."""

    record: ErasedRun
    events: int
    log_digest: str

    @property
    def intact(self) -> bool:
        return (self.events, self.log_digest) == (self.record.events, self.record.log_digest)


def erased_run(ledger: Ledger, run_id: str) -> ErasedRun | None:
    """The erasure the run's content went in, if it was erased."""
    return erasure_log.erased_run(ledger, run_id)


def erased_check(ledger: Ledger, run_id: str) -> ErasedCheck | None:
    """``None`` unless the run's content was erased."""
    record = erasure_log.erased_run(ledger, run_id)
    if record is None:
        return None
    return ErasedCheck(record, *erasure_log.log_digest(ledger, run_id))


def erased_timeline(ledger: Ledger, run_id: str) -> list[str]:
    """An erased run's timeline: what the log still says of each event (its kind and digest)."""
    return [
        f"#{seq:<3} {kind}  (erased; sha256 {digest[:16]}…)"
        for seq, kind, digest in erasure_log.log_entries(ledger, run_id)
    ]


@dataclass(frozen=True)
class Erasure:
    erasure_id: str
    runs: tuple[str, ...]
    cancelled: tuple[str, ...]
    verified: dict[str, str]
    affected: dict[str, int]
    refused: tuple[str, ...] = ()
    """Runs whose start the erasure refused: their payload keys destroyed, histories deleted."""
    schedules: tuple[str, ...] = ()
    """The subject's schedules, by name, deleted."""


async def erase(
    client: Client,
    ledger: Ledger,
    subject_id: str,
    *,
    by: Principal,
    reason: str,
    register: Path | None,
) -> Erasure:
    """Erase ``subject_id`` of ``by``'s tenant, and add it to the erasure ``register`` (``None``:
    none kept, so a restored backup brings the subject back); ``Refused`` without the eraser
    role or a reason, ``NotFound`` for a subject with nothing stored, ``Refused`` when already
    erased."""
    reason = reason.strip()
    if ERASER_ROLE not in by.roles:
        raise Refused(f"{by.user_id} lacks the {ERASER_ROLE!r} role", "missing_role")
    if not reason or len(reason) > MAX_REASON:
        raise Refused(f"an erasure needs a reason of 1 to {MAX_REASON} characters", "bad_reason")
    try:
        begun = erasure.begin(ledger, by.tenant_id, subject_id)
    except erasure.UnknownSubject as exc:
        raise NotFound(str(exc)) from None
    except erasure.AlreadyErased as exc:
        raise Refused(str(exc), "already_erased") from None
    stopped = await _stop_schedules(client, ledger, begun, by.user_id)
    refused, firings = await _close_out(client, ledger, begun)
    verified = {run_id: await _compare(client, ledger, run_id) for run_id in begun.runs}
    scheduled = (*(schedules.schedule_id(name) for name in stopped), *firings)
    erased = erasure.finish(
        ledger, begun, by=by.user_id, reason=reason, verified=verified, refused=refused,
        scheduled=scheduled,
    )  # fmt: skip
    if register is not None:
        erasure_register.record(register, erased, subject_digest(by.tenant_id, subject_id))
    for workflow_id in (*begun.runs, *refused, *firings):
        await _delete_history(client, workflow_id)
    affected = dict(erased.affected)
    return Erasure(erased.erasure_id, begun.runs, begun.live, verified, affected, refused, stopped)


async def _stop_schedules(
    client: Client, ledger: Ledger, begun: erasure.Begun, by: str
) -> tuple[str, ...]:
    """Delete the subject's schedules (``finish`` blanks their requests in the journal)."""
    subject = ledger.get_principal(begun.subject_id)
    if subject is not None and subject.tenant_id != begun.tenant_id:
        return ()  # the directory's user of that id is another tenant's
    theirs = ScheduleJournal(ledger.engine).standing(begun.subject_id)
    deleted = []
    for name in theirs:
        try:
            await schedules.change(client, ledger, name, "deleted", by, datetime.now(UTC))
        except NotFound:
            continue  # deleted in Temporal by other means; the journal's requests are blanked
        deleted.append(name)
    return tuple(deleted)


async def _close_out(
    client: Client, ledger: Ledger, begun: erasure.Begun
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Cancel the subject's runs in flight; wait for the runs refused meanwhile and the
    firings that started their runs to close, before their payload keys go."""
    for run_id in begun.live:
        await _cancel(client, run_id)
    refused = refusals.of_subject(ledger, begun.tenant_id, begun.subject_id)
    parents = [await _firing_of(client, run_id) for run_id in begun.runs]
    firings = tuple(f for f in parents if f is not None)
    for workflow_id in (*refused, *firings):
        await _closed(client, workflow_id)
    return refused, firings


async def _firing_of(client: Client, run_id: str) -> str | None:
    """The schedule's firing that started ``run_id``: its parent, as Temporal records it, when
    that is a ``ScheduledRun`` (a run started otherwise has no parent, or another kind)."""
    try:
        parent = (await client.get_workflow_handle(run_id).describe()).parent_id
        if parent is None:
            return None
        kind = (await client.get_workflow_handle(parent).describe()).workflow_type
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None  # its history or its parent's is gone already (namespace retention)
        raise
    return parent if kind == SCHEDULED_RUN else None


async def _cancel(client: Client, run_id: str) -> None:
    """Ask the run to cancel and wait for it to close; terminated if it will not."""
    handle = client.get_workflow_handle(run_id)
    try:
        await handle.cancel()
        await asyncio.wait_for(handle.result(), CANCEL_WAIT_SECONDS)
    except TimeoutError:
        await handle.terminate(reason="its subject is being erased")
    except WorkflowFailureError:
        return  # cancelled (or failed meanwhile): closed, which is what erasure waits for


async def _closed(client: Client, run_id: str) -> None:
    """Wait for a workflow that ends on its own (a refused run, a firing) to close; terminated
    if it will not."""
    handle = client.get_workflow_handle(run_id)
    try:
        await asyncio.wait_for(handle.result(), CANCEL_WAIT_SECONDS)
    except TimeoutError:
        await handle.terminate(reason="its subject is being erased")
    except (WorkflowFailureError, RPCError):
        return  # failed as refused (or gone already): closed


async def _compare(client: Client, ledger: Ledger, run_id: str) -> str:
    """How the ledger's projection compares with Temporal's history of the run, now."""
    try:
        ours = project(ledger.read(run_id)).model_dump(mode="json")
    except ContentErased:
        return "unreadable"
    try:
        theirs = (await recorded_state(client, run_id)).model_dump(mode="json")
    except NotFound:
        return "no history"
    return "matched" if ours == theirs else "differed"


async def _delete_history(client: Client, run_id: str) -> None:
    request = DeleteWorkflowExecutionRequest(
        namespace=client.namespace, workflow_execution=WorkflowExecution(workflow_id=run_id)
    )
    try:
        await client.workflow_service.delete_workflow_execution(request)
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
