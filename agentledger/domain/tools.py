"""Tool contracts and receipts: what a tool promises, and what a call produced.

A contract is more than a JSON schema (seed 003): it states scope, risk, how retries stay safe
(idempotency), what happens on cancellation and partial completion, when a human must approve,
and how the result is shown to the model and to the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.approval_rule import ApprovalRule as ApprovalRule
from agentledger.domain.approval_rule import RoleAbove as RoleAbove
from agentledger.domain.arguments import SchemaArguments, arguments_model
from agentledger.domain.canonical import sha256_hex

Scope = Literal["read", "write"]
Risk = Literal["low", "consequential"]
ReceiptStatus = Literal["succeeded", "failed", "in_doubt", "unknown"]
"""``in_doubt``: not settled yet, reconciliation will say; ``unknown``: settled as unknowable (a
write nothing can reconcile lost its answer), an unresolved error a person must check."""


class FactBound(Frozen):
    """An argument checked against a verified fact about the resource it targets.

    ``at_most``: the argument may not exceed the fact (a refund amount vs the refundable amount);
    ``equals``: the argument must equal it (the currency).
    """

    argument: str
    fact: str
    relation: Literal["at_most", "equals"]


class ModelView(Frozen):
    """How a result is slimmed for the model. Untouchable fields are never cut or truncated."""

    mode: Literal["full", "slim"] = "full"
    list_field: str | None = None
    keep_fields: tuple[str, ...] = ()
    truncate_words: int | None = None
    max_items: int | None = None
    untouchable_fields: tuple[str, ...] = ()


class _Handling:
    """How a call is retried, reconciled and cancelled: this follows from scope and whether
    the system of record can be asked."""

    scope: Scope
    reconcilable: bool

    @property
    def idempotency(self) -> Literal["none", "runtime_key"]:
        """Reads need no key; every write gets a runtime-issued key (never a blind retry)."""
        return "none" if self.scope == "read" else "runtime_key"

    @property
    def on_partial_completion(self) -> Literal["retry", "reconcile", "in_doubt"]:
        """An unknown outcome of a write is reconciled by reading the system of record, or,
        where nothing can be read, recorded as in doubt for a person (never blindly retried)."""
        if self.scope == "read":
            return "retry"
        return "reconcile" if self.reconcilable else "in_doubt"

    @property
    def cancellation(self) -> Literal["abandon", "reconcile", "in_doubt"]:
        if self.scope == "read":
            return "abandon"
        return "reconcile" if self.reconcilable else "in_doubt"


@dataclass(frozen=True)
class ToolContract(_Handling):
    """A tool's behavioural contract as its pack's code states it. What governance needs of it
    is frozen into each attempt's manifest (``terms``): runs are judged by that, not by code."""

    name: str
    version: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    scope: Scope
    risk: Risk
    required_scope: str
    timeout_seconds: float = 10.0
    heartbeat_seconds: float | None = None
    """When set, a call in flight must heartbeat this often or it is treated as lost."""
    reconcilable: bool = True
    """Whether the system of record can say if a write with a given idempotency key ran.
    A non-reconcilable write is attempted once; an unknown outcome stays in doubt."""
    approval: ApprovalRule = field(default_factory=ApprovalRule)
    resource_argument: str | None = None
    fact_bounds: tuple[FactBound, ...] = ()
    model_view: ModelView = field(default_factory=ModelView)
    summary_template: str = "{tool} result"

    @cached_property
    def input_schema(self) -> dict[str, JsonValue]:
        schema: dict[str, JsonValue] = self.input_model.model_json_schema()
        return schema

    @cached_property
    def schema_hash(self) -> str:
        return sha256_hex(
            {
                "input": self.input_model.model_json_schema(),
                "output": self.output_model.model_json_schema(),
            }
        )

    def terms(self) -> ToolTerms:
        return ToolTerms(
            name=self.name,
            version=self.version,
            description=self.description,
            scope=self.scope,
            risk=self.risk,
            required_scope=self.required_scope,
            timeout_seconds=self.timeout_seconds,
            heartbeat_seconds=self.heartbeat_seconds,
            reconcilable=self.reconcilable,
            approval=self.approval,
            resource_argument=self.resource_argument,
            fact_bounds=self.fact_bounds,
            input_schema=self.input_model.model_json_schema(),
            schema_hash=self.schema_hash,
        )


class ToolTerms(_Handling, Frozen):
    """A contract as one attempt's manifest froze it: everything the authority gate and the
    call's retries depend on, and the input schema arguments are checked against. A deploy that
    changes the pack's code changes no running attempt's terms."""

    name: str
    version: str
    description: str
    scope: Scope
    risk: Risk
    required_scope: str
    timeout_seconds: float
    heartbeat_seconds: float | None
    reconcilable: bool
    approval: ApprovalRule
    resource_argument: str | None
    fact_bounds: tuple[FactBound, ...]
    input_schema: dict[str, JsonValue]
    schema_hash: str

    @cached_property
    def input_model(self) -> type[SchemaArguments]:
        return arguments_model(f"{self.name}_arguments", self.input_schema)


class ResourceRef(Frozen):
    """A business resource a tool observed, with its verified owner."""

    resource_id: str
    kind: str
    owner_user_id: str
    tenant_id: str


class VerifiedFact(Frozen):
    """A fact read from a system of record by a tool, with when it was observed."""

    name: str
    value: JsonValue
    resource_id: str | None = None
    observed_at: datetime


class EvidencePassage(Frozen):
    """A passage a retrieval tool returned: evidence tied to an exact source revision."""

    source_id: str
    revision: str
    content_hash: str
    trust: str
    title: str
    text: str
    score: float = 0.0


class Receipt(Frozen):
    """The typed result of one tool call.

    ``model_view`` is the slimmed result the model may see (an observation, never instructions);
    the full result is stored in the ledger under ``output_hash`` and rendered for people as
    ``user_view``.
    """

    operation_id: str
    tool: str
    tool_version: str
    status: ReceiptStatus
    idempotency_key: str | None = None
    receipt_id: str | None = None
    facts: tuple[VerifiedFact, ...] = ()
    resources: tuple[ResourceRef, ...] = ()
    evidence: tuple[EvidencePassage, ...] = ()
    model_view: dict[str, JsonValue] = Field(default_factory=dict)
    user_view: str = ""
    output_hash: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    observed_at: datetime


MAX_RECEIPT_BYTES = 256_000
"""The largest receipt a tool activity returns. Temporal refuses payloads over 2 MB and the run
carries what its receipts add, so a larger result is kept whole in the ledger (``output_hash``)
and the receipt says so instead of carrying it."""


def bounded_receipt(receipt: Receipt, scope: Scope, limit: int = MAX_RECEIPT_BYTES) -> Receipt:
    """``receipt`` if it fits; otherwise a receipt that points at the stored result.

    A read that returned too much failed (``result_too_large``: the model can ask for less and
    nothing happened). A write keeps its status, receipt id, facts and resources, because its
    effect happened; only its views and evidence give way to a pointer.
    """
    size = len(receipt.model_dump_json())
    if size <= limit:
        return receipt
    where = (
        f"{size} bytes, over the {limit} a receipt may carry; kept whole as {receipt.output_hash}"
    )
    pointer: dict[str, JsonValue] = {
        "error": "result_too_large",
        "bytes": size,
        "limit": limit,
        "output_hash": receipt.output_hash,
    }
    slim = receipt.model_copy(
        update={
            "model_view": pointer,
            "user_view": f"{receipt.tool}: result of {where}",
            "evidence": (),
        }
    )
    if scope == "write":
        return slim
    return slim.model_copy(
        update={
            "status": "failed",
            "receipt_id": None,
            "facts": (),
            "resources": (),
            "error_code": "result_too_large",
            "error_message": f"the result is {where}",
        }
    )


def resource_of(terms: ToolContract | ToolTerms, arguments: dict[str, JsonValue]) -> str | None:
    """The resource a call is about: its contract's declared resource argument, as text
    (``None`` when the contract declares none or the call leaves it out)."""
    name = terms.resource_argument
    value = arguments.get(name) if name is not None else None
    if value is None or isinstance(value, dict | list):
        return None
    return value if isinstance(value, str) else str(value)


Governed = ToolContract | ToolTerms
"""What the gate authorises against: an attempt's frozen terms, or (for a run prepared before
manifests froze them) its pack's contract as deployed."""
