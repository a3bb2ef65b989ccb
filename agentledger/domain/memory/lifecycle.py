"""The memory lifecycle as pure functions: observe → quarantine → classify → evaluate → approve →
publish → (retrieve) → correct, expire, revoke or delete.

Each step takes a record (plus the acting principal and ``now``) and returns a ``Transition`` with
the events it produced, or a ``Refused`` value. Nothing here stores, fetches or reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import JsonValue

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.memory.records import (
    TERMINAL,
    Evaluation,
    EventKind,
    MemoryEvent,
    MemoryProposal,
    MemoryRecord,
    MemoryState,
    Refused,
    Transition,
)
from agentledger.domain.memory.rules import (
    RULES,
    claim_key,
    content_problem,
    is_curator,
    may,
    may_read,
)
from agentledger.domain.principal import Principal

Outcome = Transition | Refused
POLICY = "policy"


def _event(
    record: MemoryRecord, kind: EventKind, actor: str, now: datetime, **detail: JsonValue
) -> MemoryEvent:
    return MemoryEvent(memory_id=record.memory_id, kind=kind, at=now, actor=actor, detail=detail)


def _move(
    record: MemoryRecord,
    state: MemoryState,
    kind: EventKind,
    actor: str,
    now: datetime,
    **detail: JsonValue,
) -> Transition:
    moved = record.model_copy(update={"state": state})
    return Transition(record=moved, events=(_event(moved, kind, actor, now, **detail),))


def _refuse(memory_id: str, code: str, detail: str) -> Refused:
    return Refused(memory_id=memory_id, code=code, detail=detail)


def write_problem(proposal: MemoryProposal, actor: Principal) -> str | None:
    """The write rule: an allowed writer kind, acting inside its own tenant and scope."""
    rule = RULES[proposal.category]
    scope = proposal.scope
    if proposal.writer not in rule.writers:
        return f"{proposal.writer} may not write {proposal.category}"
    if actor.tenant_id != scope.tenant_id:
        return "the writer acts for another tenant"
    if rule.user_scoped != (scope.user_id is not None):
        return f"{proposal.category} is {'user' if rule.user_scoped else 'tenant'}-scoped"
    if proposal.trust not in rule.trust:
        return f"{proposal.category} cannot carry trust {proposal.trust}"
    if proposal.writer == "curator":
        return None if is_curator(actor, scope.tenant_id) else "the writer is not a curator"
    if scope.user_id is not None and scope.user_id != actor.user_id:
        return "only the user's own runs and requests may write their memory"
    return None


def observe(proposal: MemoryProposal, actor: Principal, now: datetime) -> Outcome:
    """Admit a proposal to quarantine; a quarantined memory is never retrieved."""
    problem = write_problem(proposal, actor)
    if problem is not None:
        return _refuse(proposal.memory_id, "write_not_allowed", problem)
    retention = now + RULES[proposal.category].retention
    expires = min(proposal.expires_at, retention) if proposal.expires_at else retention
    record = MemoryRecord(
        **proposal.model_dump(exclude={"expires_at"}),
        content_hash=sha256_hex(proposal.content),
        claim_key=claim_key(proposal.category, proposal.content),
        owner=proposal.scope.user_id or actor.user_id,
        created_at=now,
        expires_at=expires,
        state="quarantined",
    )
    who = actor.user_id
    observed = _event(record, "observed", who, now, writer=proposal.writer, source=proposal.source)
    quarantined = _event(record, "quarantined", who, now)
    return Transition(record=record, events=(observed, quarantined))


def classify(record: MemoryRecord, now: datetime) -> Outcome:
    """Validate the content against the category's rule; refusal leaves it quarantined."""
    if record.state != "quarantined":
        return _refuse(record.memory_id, "wrong_state", f"cannot classify a {record.state} memory")
    problem = content_problem(record.category, record.content)
    if problem is not None:
        return _refuse(record.memory_id, "invalid_content", problem)
    sensitivity = record.sensitivity
    return _move(record, "classified", "classified", POLICY, now, sensitivity=sensitivity)


def evaluate(
    record: MemoryRecord, published: Sequence[MemoryRecord], now: datetime
) -> Evaluation | Refused:
    """Check evidence and confidence, and pair the record with what it contradicts.

    Policy may approve only a clean record from a writer the category trusts; anything else
    waits for a person. Contradictions are returned, never resolved here.
    """
    if record.state != "classified":
        return _refuse(record.memory_id, "wrong_state", f"cannot evaluate a {record.state} memory")
    rule = RULES[record.category]
    reasons = []
    if rule.evidence_required and not record.evidence:
        return _refuse(record.memory_id, "missing_evidence", f"{record.category} needs evidence")
    if record.confidence < rule.min_confidence:
        reasons.append(f"confidence {record.confidence} below {rule.min_confidence}")
    others = [p for p in published if p.memory_id != record.supersedes]
    pairs = tuple(contradictions([record, *others]))
    if pairs:
        reasons.append("contradicts a published memory")
    if record.writer not in rule.policy_approves:
        reasons.append(f"{record.writer}-written {record.category} needs a person's approval")
    moved = _move(record, "evaluated", "evaluated", POLICY, now, reasons=list(reasons))
    return Evaluation(
        transition=moved,
        policy_may_approve=not reasons,
        contradictions=pairs,
        reasons=tuple(reasons),
    )


def approve(record: MemoryRecord, approver: Principal | None, now: datetime) -> Outcome:
    """``approver=None`` is approval by policy, allowed only after a clean evaluation."""
    if record.state != "evaluated":
        return _refuse(record.memory_id, "wrong_state", f"cannot approve a {record.state} memory")
    if approver is not None and not is_curator(approver, record.scope.tenant_id):
        return _refuse(record.memory_id, "not_a_curator", f"{approver.user_id} cannot approve")
    who = POLICY if approver is None else approver.user_id
    moved = _move(record, "approved", "approved", who, now)
    return moved.model_copy(update={"record": moved.record.model_copy(update={"approved_by": who})})


def publish(record: MemoryRecord, now: datetime) -> Outcome:
    if record.state != "approved":
        return _refuse(record.memory_id, "wrong_state", f"cannot publish a {record.state} memory")
    return _move(record, "published", "published", POLICY, now)


def supersede(old: MemoryRecord, new_id: str, actor: Principal, now: datetime) -> Outcome:
    """Correction: the old record stays for audit but is never retrieved as current again."""
    if old.state in TERMINAL:
        return _refuse(old.memory_id, "wrong_state", f"cannot correct a {old.state} memory")
    if not may(RULES[old.category].correction, actor, old):
        return _refuse(old.memory_id, "correction_not_allowed", f"{actor.user_id} may not correct")
    moved = _move(old, "superseded", "superseded", actor.user_id, now, superseded_by=new_id)
    return moved.model_copy(
        update={"record": moved.record.model_copy(update={"superseded_by": new_id})}
    )


def expire(record: MemoryRecord, now: datetime) -> Outcome:
    if record.state in TERMINAL or record.expires_at is None or record.expires_at > now:
        return _refuse(record.memory_id, "not_due", "the memory has not expired")
    return _move(record, "expired", "expired", POLICY, now)


def revoke(record: MemoryRecord, actor: Principal, reason: str, now: datetime) -> Outcome:
    if record.state in {"revoked", "deleted"}:
        return _refuse(record.memory_id, "wrong_state", f"the memory is already {record.state}")
    if not (is_curator(actor, record.scope.tenant_id) or may("owner_or_curator", actor, record)):
        return _refuse(record.memory_id, "revocation_not_allowed", f"{actor.user_id} may not")
    return _move(record, "revoked", "revoked", actor.user_id, now, reason=reason)


def delete(record: MemoryRecord, actor: Principal, now: datetime) -> Outcome:
    """Forget: the record keeps its id and hash as a tombstone; its content is erased."""
    if record.state == "deleted":
        return _refuse(record.memory_id, "wrong_state", "the memory is already deleted")
    if not may(RULES[record.category].deletion, actor, record):
        return _refuse(record.memory_id, "deletion_not_allowed", f"{actor.user_id} may not")
    erased = record.model_copy(update={"state": "deleted", "content": {}})
    hashed = record.content_hash
    return Transition(
        record=erased, events=(_event(erased, "deleted", actor.user_id, now, content_hash=hashed),)
    )


def omission_reason(record: MemoryRecord, principal: Principal, now: datetime) -> str | None:
    """Why a stored record may not be retrieved now; ``None`` means it may."""
    if not may_read(principal, record):
        return "not_readable"
    if record.state != "published" or record.superseded_by is not None:
        return record.state if record.state != "published" else "superseded"
    if record.expires_at is not None and record.expires_at <= now:
        return "expired"
    return None


def contradictions(records: Iterable[MemoryRecord]) -> list[tuple[str, str]]:
    """Pairs (sorted ids) asserting different values for one claim in one scope."""
    by_claim: dict[tuple[str, str, str | None], list[MemoryRecord]] = {}
    for r in records:
        if r.claim_key is not None and r.state not in TERMINAL:
            by_claim.setdefault((r.claim_key, r.scope.tenant_id, r.scope.user_id), []).append(r)
    pairs = set()
    for group in by_claim.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if a.content_hash != b.content_hash:
                    x, y = sorted((a.memory_id, b.memory_id))
                    pairs.add((x, y))
    return sorted(pairs)
