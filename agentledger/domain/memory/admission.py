"""Admission by policy, correction, and the memory a finished run proposes.

``admit`` chains the lifecycle as far as policy allows: a clean proposal from a writer its
category trusts is published; anything else stops in quarantine or evaluation, waiting for a
person. The caller persists every transition it returns, in order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import get_args

from pydantic import JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.canonical import canonical_json
from agentledger.domain.events import MemoryProposed
from agentledger.domain.memory.lifecycle import (
    approve,
    classify,
    evaluate,
    observe,
    publish,
    supersede,
)
from agentledger.domain.memory.records import (
    MemoryCategory,
    MemoryProposal,
    MemoryRecord,
    MemoryScope,
    Refused,
    Transition,
)
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState

_CATEGORIES: frozenset[str] = frozenset(get_args(MemoryCategory))


class Admission(Frozen):
    """Every transition made, the record's final form, and why it stopped where it did."""

    transitions: tuple[Transition, ...] = ()
    record: MemoryRecord | None = None
    refused: Refused | None = None
    contradictions: tuple[tuple[str, str], ...] = ()
    awaiting_person: tuple[str, ...] = ()

    @property
    def published(self) -> bool:
        return self.record is not None and self.record.state == "published"


def admit(
    proposal: MemoryProposal,
    actor: Principal,
    published: Sequence[MemoryRecord],
    now: datetime,
) -> Admission:
    """observe → quarantine → classify → evaluate, then approve and publish if policy may."""
    first = observe(proposal, actor, now)
    if isinstance(first, Refused):
        return Admission(refused=first)
    done = [first]
    classified = classify(first.record, now)
    if isinstance(classified, Refused):
        return Admission(transitions=tuple(done), record=first.record, refused=classified)
    done.append(classified)
    verdict = evaluate(classified.record, published, now)
    if isinstance(verdict, Refused):
        return Admission(transitions=tuple(done), record=classified.record, refused=verdict)
    done.append(verdict.transition)
    if not verdict.policy_may_approve:
        return Admission(
            transitions=tuple(done),
            record=verdict.transition.record,
            contradictions=verdict.contradictions,
            awaiting_person=verdict.reasons,
        )
    return _publish(done, verdict.transition.record, None, now)


def approve_and_publish(record: MemoryRecord, approver: Principal, now: datetime) -> Admission:
    """A person's approval of an evaluated record, published at once."""
    return _publish([], record, approver, now)


def _publish(
    done: list[Transition], record: MemoryRecord, approver: Principal | None, now: datetime
) -> Admission:
    approved = approve(record, approver, now)
    if isinstance(approved, Refused):
        return Admission(transitions=tuple(done), record=record, refused=approved)
    published = publish(approved.record, now)
    assert isinstance(published, Transition)  # an approved record always publishes
    done += [approved, published]
    return Admission(transitions=tuple(done), record=published.record)


def correct(
    old: MemoryRecord,
    replacement: MemoryProposal,
    actor: Principal,
    published: Sequence[MemoryRecord],
    now: datetime,
) -> Admission:
    """Supersede ``old`` at once (it never returns as current), then admit the replacement.

    The old record leaves retrieval immediately even if the replacement must wait for a person:
    a stale value is worse than none."""
    retired = supersede(old, replacement.memory_id, actor, now)
    if isinstance(retired, Refused):
        return Admission(refused=retired)
    linked = replacement.model_copy(update={"supersedes": old.memory_id})
    admitted = admit(linked, actor, [p for p in published if p.memory_id != old.memory_id], now)
    if admitted.refused is not None and admitted.record is None:
        return admitted  # not even observed: the old record stays current
    return admitted.model_copy(update={"transitions": (retired, *admitted.transitions)})


class OutcomeProposal(Frozen):
    """What a finishing run proposes to remember (the fields of its ``MemoryProposed``)."""

    memory_id: str
    category: str
    content: str
    evidence: tuple[str, ...]


def outcome_proposal(state: WorkingState) -> OutcomeProposal | None:
    """What a finishing run's ``MemoryProposed`` proposes, or ``None``.

    Call it just before ``RunCompleted`` (no event may follow the end of a run). Only an
    outcome with a receipt is worth remembering: the latest succeeded write.
    """
    writes = [
        a
        for a in state.completed_actions
        if a.status == "succeeded" and a.idempotency_key is not None and a.receipt_id
    ]
    if not writes or state.work_order is None:
        return None
    action, seq = writes[-1], state.last_seq + 1
    content: dict[str, JsonValue] = {
        "tool": action.tool,
        "summary": action.summary,
        "receipt_id": action.receipt_id,
        "operation_id": action.operation_id,
        **{k: v for k, v in sorted(state.work_order.references.items())},
    }
    return OutcomeProposal(
        memory_id=f"mem_{state.run_id}_{seq}",
        category="prior_outcome",
        content=canonical_json(content).decode(),
        evidence=(f"receipt:{action.receipt_id}", f"run:{state.run_id}#{action.operation_id}"),
    )


def proposal_from_event(event: MemoryProposed, principal: Principal) -> MemoryProposal | Refused:
    """A run's ``MemoryProposed`` event as a proposal, in the run principal's own scope."""
    try:
        content = json.loads(event.content)
    except ValueError:
        content = {"text": event.content}
    if event.category not in _CATEGORIES or not isinstance(content, dict):
        return Refused(memory_id=event.memory_id, code="invalid_proposal", detail=event.category)
    return MemoryProposal.model_validate(
        {
            "memory_id": event.memory_id,
            "category": event.category,
            "content": content,
            "scope": MemoryScope(tenant_id=principal.tenant_id, user_id=principal.user_id),
            "writer": "run",
            "source": f"run:{event.run_id}#{event.seq}",
            "trust": "verified_fact" if event.category == "prior_outcome" else "model_summary",
            "evidence": event.evidence,
        }
    )
