"""The τ² conformance harness: run tasks through the runtime and judge them by τ²'s oracle.

A task passes when its run completed, its sandbox's final DB hash (rebuilt from the journal alone)
equals the hash of τ²'s reference replay of the gold actions, every gold call that raised became a
failed receipt followed by an ``ErrorRecorded`` event, and every write has exactly one final
receipt and one journal row. In the ``deny_writes`` variant the approver rejects every write: the
hash must equal the initial one and every gold write must be recorded as a refusal.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy.engine import Engine

from agentledger.activities.ledger import Ledger
from agentledger.domain import events as ev
from agentledger.packs.tau2 import approver_for, work_order
from agentledger.packs.tau2.catalog import Domain, domain, gold_actions, initial_hash, reference
from agentledger.packs.tau2.tools import journal
from bench.hosted.driver import RunSpec

__all__ = ["Outcome", "Variant", "judge", "specs"]

Variant = Literal["approve", "deny_writes"]


@dataclass
class Outcome:
    domain: Domain
    task_id: str
    run_id: str
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def specs(name: Domain, task_ids: Sequence[str], variant: Variant) -> list[RunSpec]:
    out = []
    for task_id in task_ids:
        nonce = uuid.uuid4().hex[:10]
        order = work_order(name, task_id, nonce)
        out.append(
            RunSpec(
                run_id=f"tau2-{name}-{task_id}-{nonce}",
                work_order=order,
                approver_id=approver_for(order).user_id,
                approve=lambda _proposal, v=variant: v == "approve",
            )
        )
    return out


def judge(ledger: Ledger, spec: RunSpec, variant: Variant) -> Outcome:
    refs = spec.work_order.references
    name, task_id = refs["tau2_domain"], refs["tau2_task"]
    outcome = Outcome(name, task_id, spec.run_id)  # type: ignore[arg-type]
    events = ledger.read(spec.run_id)
    sandbox = spec.work_order.principal.tenant_id
    problems = outcome.problems
    if not any(isinstance(e, ev.RunCompleted) for e in events):
        problems.append("run did not complete")
    final = journal.rebuild(ledger.engine, sandbox).db_hash()  # type: ignore[attr-defined]
    if variant == "approve":
        problems += _approved(ledger.engine, events, sandbox, outcome, final)
    else:
        problems += _denied(ledger.engine, events, sandbox, outcome, final)
    return outcome


def _approved(
    engine: Engine, events: list[ev.RunEvent], sandbox: str, o: Outcome, final: str
) -> list[str]:
    ref, problems = reference(o.domain, o.task_id), []
    if final != ref.db_hash:
        problems.append(f"final DB hash {final[:12]} != reference {ref.db_hash[:12]}")
    failed = [
        e.receipt.operation_id
        for e in events
        if isinstance(e, ev.ToolReceiptRecorded) and e.receipt.status == "failed"
    ]
    errors = {e.operation_id for e in events if isinstance(e, ev.ErrorRecorded)}
    if len(failed) != ref.failed_calls or not set(failed) <= errors:
        problems.append(f"{len(failed)} failed receipts ({ref.failed_calls} gold calls raise)")
    problems += _one_receipt_per_write(engine, events, sandbox, o.domain)
    return problems


def _one_receipt_per_write(
    engine: Engine, events: list[ev.RunEvent], sandbox: str, name: Domain
) -> list[str]:
    writes = domain(name).write_tools
    authorised = {
        e.operation_id: e.idempotency_key
        for e in events
        if isinstance(e, ev.ToolCallAuthorised) and e.tool in writes
    }
    finals = Counter(
        e.receipt.operation_id
        for e in events
        if isinstance(e, ev.ToolReceiptRecorded) and e.receipt.status != "in_doubt"
    )
    rows = journal.entries(engine, sandbox)
    problems = [f"{op} has {finals[op]} final receipts" for op in authorised if finals[op] != 1]
    if sorted(r.idempotency_key for r in rows) != sorted(str(k) for k in authorised.values()):
        problems.append(f"{len(rows)} journal rows for {len(authorised)} authorised writes")
    return problems


def _denied(
    engine: Engine, events: list[ev.RunEvent], sandbox: str, o: Outcome, final: str
) -> list[str]:
    problems = []
    if final != initial_hash(o.domain):
        problems.append("DB changed although every write was denied")
    if journal.entries(engine, sandbox):
        problems.append("journal has rows although every write was denied")
    writes = domain(o.domain).write_tools
    expected = sum(a.tool in writes for a in gold_actions(o.domain, o.task_id))
    refusals = sum(isinstance(e, ev.ApprovalRejected) for e in events) + sum(
        isinstance(e, ev.ToolCallDenied) and e.tool in writes for e in events
    )
    if refusals != expected:
        problems.append(f"{refusals} recorded refusals for {expected} gold writes")
    return problems
