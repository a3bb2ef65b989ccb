"""Context items: one candidate piece of context plus the metadata that decides its fate.

Plain text cannot say whether it is current, trusted, required or safe to show; the metadata here
can, so the builder decides from metadata and the model only ever sees the selected content.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, NotRequired, TypedDict, Unpack

from pydantic import AwareDatetime, JsonValue, model_validator

from agentledger.domain._model import Frozen
from agentledger.domain.canonical import sha256_hex

Kind = Literal[
    "instruction",
    "user_request",
    "verified_fact",
    "policy_passage",
    "tool_result",
    "conversation_turn",
    "memory",
    "record_index",
    "principal_profile",
    "unresolved_error",
    "operator_instruction",
]
TrustLevel = Literal[
    "instruction",
    "operator_instruction",
    "verified_fact",
    "approved_policy",
    "tool_observation",
    "user_claim",
    "model_summary",
    "untrusted",
]
Category = Literal["instructions", "authoritative", "reference", "working", "evidence"]
Lifecycle = Literal[
    "observed",
    "quarantined",
    "classified",
    "evaluated",
    "approved",
    "published",
    "superseded",
    "revoked",
    "expired",
]
Sensitivity = Literal["public", "internal", "confidential", "restricted"]

KIND_CATEGORY: Mapping[Kind, Category] = MappingProxyType(
    {
        "instruction": "instructions",
        "verified_fact": "authoritative",
        "principal_profile": "authoritative",
        "policy_passage": "evidence",
        "tool_result": "evidence",
        "user_request": "working",
        "conversation_turn": "working",
        "unresolved_error": "working",
        "operator_instruction": "working",
        "memory": "reference",
        "record_index": "reference",
    }
)
"""Which of the five visibly separate categories each kind belongs to (seed 003)."""

KIND_TRUST: Mapping[Kind, frozenset[TrustLevel]] = MappingProxyType(
    {
        "instruction": frozenset({"instruction"}),
        "verified_fact": frozenset({"verified_fact"}),
        "principal_profile": frozenset({"verified_fact"}),
        "policy_passage": frozenset({"approved_policy"}),
        "operator_instruction": frozenset({"operator_instruction"}),
    }
)
"""Kinds that claim authority must carry matching trust; text cannot promote itself by its kind.
Kinds not listed accept any trust level and are shown as marked data."""

TRUST_RANK: Mapping[TrustLevel, int] = MappingProxyType(
    {
        "instruction": 6,
        "approved_policy": 5,
        "verified_fact": 5,
        "tool_observation": 4,
        "operator_instruction": 3,
        "user_claim": 2,
        "model_summary": 1,
        "untrusted": 0,
    }
)
"""Authority order used for ranking and for choosing the survivor among duplicates."""

PUBLISHED: frozenset[Lifecycle | None] = frozenset({"published", None})


class ItemFields(TypedDict):
    """The keywords ``ContextItem.make`` takes besides ``content_hash``: the first six are required,
    the rest default as on the model."""

    id: str
    kind: Kind
    content: JsonValue
    source: str
    trust_level: TrustLevel
    created_at: datetime
    expires_at: NotRequired[datetime | None]
    required_for_step: NotRequired[tuple[str, ...]]
    revision: NotRequired[str | None]
    sensitivity: NotRequired[Sensitivity]
    tenant_id: NotRequired[str | None]
    permission_scope: NotRequired[str | None]
    title: NotRequired[str]
    lifecycle_state: NotRequired[Lifecycle | None]
    relevance: NotRequired[float]
    superseded_by: NotRequired[str | None]
    claim_key: NotRequired[str | None]


class ContextItem(Frozen):
    """One candidate for a model call. ``content_hash`` is derived from ``content`` when absent.

    ``tenant_id=None`` means global; ``permission_scope`` is the scope the principal must hold.
    ``claim_key`` names the fact the item asserts (e.g. ``customer.language``) so that two items
    asserting different values can be surfaced as a conflict instead of silently resolved.
    """

    id: str
    kind: Kind
    content: JsonValue
    source: str
    trust_level: TrustLevel
    created_at: AwareDatetime
    content_hash: str
    expires_at: AwareDatetime | None = None
    required_for_step: tuple[str, ...] = ()
    revision: str | None = None
    sensitivity: Sensitivity = "internal"
    tenant_id: str | None = None
    permission_scope: str | None = None
    title: str = ""
    lifecycle_state: Lifecycle | None = None
    relevance: float = 0.0
    superseded_by: str | None = None
    claim_key: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _derive_hash(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("content_hash"):
            return {**data, "content_hash": sha256_hex(data.get("content"))}
        return data

    @property
    def category(self) -> Category:
        return KIND_CATEGORY[self.kind]

    @classmethod
    def make(cls, *, content_hash: str | None = None, **fields: Unpack[ItemFields]) -> ContextItem:
        """Build an item; ``content`` is hashed with the canonical digest unless a hash is given."""
        return cls(**fields, content_hash=content_hash or sha256_hex(fields["content"]))
