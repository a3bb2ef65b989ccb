"""Per-category rules, in code: who may write, how content is validated, who may read, who may
correct or delete, how long it is kept, and when policy (rather than a person) may approve it.

Keeping categories apart is the point (seed 000): a user's language preference and a run's
routing guess need different owners, evidence and retention.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Literal

from pydantic import JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.memory.records import MemoryCategory, MemoryRecord, MemoryTrust, WriterKind
from agentledger.domain.principal import Principal

CURATOR_ROLE = "memory_curator"
"""The duty of approving, correcting and revoking memories for a tenant. Not the refund approver."""

Who = Literal["owner_or_curator", "curator", "nobody"]
Readers = Literal["owner", "tenant"]

# Content that must never become memory: secrets and payment data have systems of record.
FORBIDDEN_KEYS = frozenset(
    {"password", "secret", "token", "api_key", "card_number", "cvv", "iban", "ssn"}
)
MAX_CONTENT_CHARS = 2_000


class CategoryRule(Frozen):
    category: MemoryCategory
    writers: frozenset[WriterKind]
    trust: frozenset[MemoryTrust]
    user_scoped: bool
    evidence_required: bool
    readers: Readers
    correction: Who
    deletion: Who
    retention: timedelta
    policy_approves: frozenset[WriterKind]
    min_confidence: float = 0.0
    single_claim: bool = False


def _rule(category: MemoryCategory, **fields: object) -> CategoryRule:
    return CategoryRule.model_validate({"category": category, **fields})


RULES: Mapping[MemoryCategory, CategoryRule] = MappingProxyType(
    {
        # The user is the authority on their own preference; one key per record so that a
        # correction or a contradiction concerns exactly one claim.
        "user_preference": _rule(
            "user_preference",
            writers={"principal", "curator", "run"},
            trust={"user_claim"},
            user_scoped=True,
            evidence_required=False,
            readers="owner",
            correction="owner_or_curator",
            deletion="owner_or_curator",
            retention=timedelta(days=365),
            policy_approves={"principal"},
            single_claim=True,
        ),
        "project_convention": _rule(
            "project_convention",
            writers={"curator"},
            trust={"verified_fact", "user_claim"},
            user_scoped=False,
            evidence_required=True,
            readers="tenant",
            correction="curator",
            deletion="curator",
            retention=timedelta(days=730),
            policy_approves=set(),
        ),
        # An outcome is only worth remembering with the receipt that proves it happened.
        "prior_outcome": _rule(
            "prior_outcome",
            writers={"run"},
            trust={"verified_fact"},
            user_scoped=True,
            evidence_required=True,
            readers="owner",
            correction="nobody",
            deletion="owner_or_curator",
            retention=timedelta(days=90),
            policy_approves={"run"},
        ),
        "routing_choice": _rule(
            "routing_choice",
            writers={"run", "curator"},
            trust={"model_summary", "verified_fact"},
            user_scoped=False,
            evidence_required=True,
            readers="tenant",
            correction="curator",
            deletion="curator",
            retention=timedelta(days=180),
            policy_approves=set(),
            min_confidence=0.7,
        ),
        # A model's summary is never proof of anything: a person must approve it.
        "run_summary": _rule(
            "run_summary",
            writers={"run", "model"},
            trust={"model_summary"},
            user_scoped=True,
            evidence_required=True,
            readers="owner",
            correction="nobody",
            deletion="owner_or_curator",
            retention=timedelta(days=30),
            policy_approves=set(),
        ),
    }
)


def is_curator(principal: Principal, tenant_id: str) -> bool:
    return principal.tenant_id == tenant_id and principal.has_role(CURATOR_ROLE)


def may(who: Who, principal: Principal, record: MemoryRecord) -> bool:
    """Correction and deletion rights: the owner (for user-scoped memory) or a curator."""
    if who == "nobody" or principal.tenant_id != record.scope.tenant_id:
        return False
    owner = record.scope.user_id is not None and principal.user_id == record.scope.user_id
    return is_curator(principal, record.scope.tenant_id) or (who == "owner_or_curator" and owner)


def may_read(principal: Principal, record: MemoryRecord) -> bool:
    """The read rule: never across tenants; user-scoped memory only for that user."""
    if principal.tenant_id != record.scope.tenant_id:
        return False
    if RULES[record.category].readers == "tenant" or record.scope.user_id is None:
        return True
    return principal.user_id == record.scope.user_id


def content_problem(category: MemoryCategory, content: dict[str, JsonValue]) -> str | None:
    """The validation rule: shape and forbidden content; ``None`` means the content is valid."""
    if not content:
        return "content is empty"
    lowered = {k.lower() for k in content}
    if lowered & FORBIDDEN_KEYS:
        return f"content holds forbidden fields: {', '.join(sorted(lowered & FORBIDDEN_KEYS))}"
    if len(str(content)) > MAX_CONTENT_CHARS:
        return f"content exceeds {MAX_CONTENT_CHARS} characters"
    if RULES[category].single_claim:
        (value,) = content.values() if len(content) == 1 else (None,)
        if len(content) != 1 or not isinstance(value, str | int | float | bool):
            return "a preference holds exactly one key with a scalar value"
    return None


def claim_key(category: MemoryCategory, content: dict[str, JsonValue]) -> str | None:
    """What a single-claim memory asserts, e.g. ``preference.language``."""
    if RULES[category].single_claim and len(content) == 1:
        return f"preference.{next(iter(content))}"
    return None
