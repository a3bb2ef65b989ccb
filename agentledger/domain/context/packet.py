"""The context packet: exactly what one model call receives, and what was left out and why.

A packet is stored in the ledger, so it is plain JSON: a trace can reconstruct the exact input and
explain every omission. Denied items leave no trace here beyond a count.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from types import MappingProxyType
from typing import Annotated, Any, Literal, cast

from pydantic import Field, JsonValue, TypeAdapter

from agentledger.domain._legacy_answer import Answer as LegacyAnswer
from agentledger.domain._model import Frozen
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context.items import Category, Kind, Sensitivity, TrustLevel
from agentledger.domain.decisions import (
    Answer,
    AskUser,
    CallTool,
    Delegate,
    Proceed,
    ProceedToAnswer,
)
from agentledger.domain.graph import OutputSchemaName, StepNode
from agentledger.domain.tools import Governed

SectionName = Literal[
    "instructions",
    "working_state",
    "operator",
    "authoritative",
    "evidence",
    "tool_results",
    "conversation",
    "reference",
]
OmissionReason = Literal[
    "not_required_for_step",
    "budget_section_full",
    "expired",
    "duplicate",
    "superseded",
    "untrusted_not_allowed",
    "quarantined",
    "revoked",
    "not_published",
    "indexed_only",
]


class ToolDefinition(Frozen):
    """A tool as the model sees it. Only definitions the caller passes can ever become visible."""

    name: str
    description: str
    input_schema: dict[str, JsonValue] = Field(default_factory=dict)
    version: str = ""
    consequential: bool = False

    @classmethod
    def from_contract(cls, contract: Governed) -> ToolDefinition:
        schema = cast(dict[str, JsonValue], contract.input_model.model_json_schema())
        return cls(
            name=contract.name,
            description=contract.description,
            input_schema=schema,
            version=contract.version,
            consequential=contract.risk == "consequential",
        )


class PacketItem(Frozen):
    id: str
    kind: Kind
    category: Category
    source: str
    trust_level: TrustLevel
    title: str
    revision: str | None
    content: JsonValue
    content_hash: str
    created_at: datetime
    tokens: int
    required: bool
    sensitivity: Sensitivity = "internal"
    """Who may read it in the inspector (``clearance``); the model is not told."""


class Section(Frozen):
    name: SectionName
    category: Category
    items: tuple[PacketItem, ...]
    tokens: int


class Omission(Frozen):
    """Why a candidate was left out (seed 000's trace record); ``detail`` names the winner."""

    item_id: str
    kind: Kind
    decision: Literal["omitted"] = "omitted"
    reason: OmissionReason
    estimated_tokens: int
    detail: str | None = None


class Conflict(Frozen):
    """Items (or an item and a verified fact) asserting different values for one key.

    Surfaced, never resolved: the model and the trace see both sides. ``item_ids`` may include an
    item later omitted for space; its omission record says so.
    """

    key: str
    item_ids: tuple[str, ...]
    state_fact: str | None = None


class OutputSchema(Frozen):
    name: str
    json_schema: dict[str, JsonValue]


class ContextPacket(Frozen):
    step: str
    policy_version: str
    sections: tuple[Section, ...]
    working_state: dict[str, JsonValue]
    tools: tuple[ToolDefinition, ...]
    proposable_actions: tuple[ToolDefinition, ...]
    output_schema: OutputSchema
    omissions: tuple[Omission, ...]
    denied_count: int
    conflicts: tuple[Conflict, ...]
    section_tokens: dict[str, int]
    total_tokens: int
    token_limit: int
    token_counter: str
    included_ids: tuple[str, ...]
    cache_key: str
    packet_format: int = 1
    """Which rendering its token counts measure (``render.PACKET_FORMAT``); 1 for packets stored
    before formats were recorded."""
    packet_hash: str = ""

    def compute_hash(self) -> str:
        """Canonical digest of everything but the hash itself; a format-1 packet predates the
        ``packet_format`` field and hashes as it did then."""
        legacy = {"packet_format"} if self.packet_format == 1 else set()
        body = self.model_dump(mode="json", exclude={"packet_hash", *legacy})
        for section in body["sections"]:
            for item in section["items"]:
                if item["sensitivity"] == "internal":  # as hashed before items carried one
                    del item["sensitivity"]
        return sha256_hex(body)

    def section(self, name: SectionName) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def items(self) -> tuple[PacketItem, ...]:
        return tuple(item for s in self.sections for item in s.items)

    def items_of_kind(self, kind: Kind) -> tuple[PacketItem, ...]:
        return tuple(item for item in self.items() if item.kind == kind)

    def item(self, item_id: str) -> PacketItem | None:
        return next((item for item in self.items() if item.id == item_id), None)

    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def omission_for(self, item_id: str) -> Omission | None:
        return next((o for o in self.omissions if o.item_id == item_id), None)


def cited_ids_present(packet: ContextPacket, cited: Sequence[str]) -> tuple[str, ...]:
    """The cited ids the model could not have seen: neither an included item id nor its source."""
    seen = set(packet.included_ids) | {item.source for item in packet.items()}
    return tuple(c for c in cited if c not in seen)


def _schema(adapter: TypeAdapter[Any]) -> dict[str, JsonValue]:
    return cast(dict[str, JsonValue], adapter.json_schema())


_BY_TYPE = Field(discriminator="type")
_NEXT_ACTION = Annotated[CallTool | ProceedToAnswer, _BY_TYPE]


def _answer_schema(adapter: TypeAdapter[Any], bound_claims: bool) -> dict[str, JsonValue]:
    """Under bound claims the schema offers ``claims`` only: the ids-only field still parses
    (recorded answers) but is refused, so a model is not shown it."""
    schema = copy.deepcopy(_schema(adapter))
    if bound_claims:
        defs = cast(dict[str, Any], schema.get("$defs", {}))
        for shape in (schema, defs.get("Answer", {})):
            cast(dict[str, Any], shape.get("properties", {})).pop("claimed_operation_ids", None)
    return schema


OUTPUT_SCHEMAS: Mapping[str, OutputSchema] = MappingProxyType(
    {
        "next_action": OutputSchema(
            name="next_action", json_schema=_schema(TypeAdapter(_NEXT_ACTION))
        ),
        "answer": OutputSchema(name="answer", json_schema=_schema(TypeAdapter(LegacyAnswer))),
    }
)
"""The fixed schemas of manifests frozen before step graphs (and before bound claims)."""

_BOUND_ANSWER = OutputSchema(
    name="answer", json_schema=_answer_schema(TypeAdapter(Answer), bound_claims=True)
)

_GRAPH_OUTPUTS: Mapping[tuple[str, bool], TypeAdapter[Any]] = MappingProxyType(
    {
        ("next_action", False): TypeAdapter(Annotated[CallTool | Proceed, _BY_TYPE]),
        ("next_action", True): TypeAdapter(Annotated[CallTool | Proceed | AskUser, _BY_TYPE]),
    }
)

_GRAPH_ANSWERS: Mapping[tuple[bool, bool], TypeAdapter[Any]] = MappingProxyType(
    {
        (False, False): TypeAdapter(LegacyAnswer),
        (False, True): TypeAdapter(Annotated[LegacyAnswer | AskUser, _BY_TYPE]),
        (True, False): TypeAdapter(Answer),
        (True, True): TypeAdapter(Annotated[Answer | AskUser, _BY_TYPE]),
    }
)


_DELEGATING: Mapping[bool, TypeAdapter[Any]] = MappingProxyType(
    {
        False: TypeAdapter(Annotated[CallTool | Proceed | Delegate, _BY_TYPE]),
        True: TypeAdapter(Annotated[CallTool | Proceed | Delegate | AskUser, _BY_TYPE]),
    }
)


@cache
def decision_schema(
    name: OutputSchemaName,
    node: StepNode | None,
    handoffs: tuple[str, ...] = (),
    bound_claims: bool = False,
) -> OutputSchema:
    """The decision a step's model must return. A manifest frozen before step graphs
    (``node=None``) keeps the fixed schemas; under a graph a ``next_action`` step may ``proceed``
    only to the steps its node names, and a node that may ask offers ``ask_user`` too. A
    ``next_action`` step with handoff contracts may also ``delegate`` through one of them.
    ``bound_claims``: the manifest's (an answer's claims name their resource)."""
    if name == "answer":
        return _answer_output(node, bound_claims)
    adapter = _GRAPH_OUTPUTS.get((name, node.ask_user)) if node is not None else None
    if node is None or adapter is None:
        return OUTPUT_SCHEMAS[name]
    if handoffs and name == "next_action":
        adapter = _DELEGATING[node.ask_user]
    schema = copy.deepcopy(_schema(adapter))
    defs = cast(dict[str, Any], schema.get("$defs", {}))
    if "Proceed" in defs:
        defs["Proceed"]["properties"]["to"] = {
            "enum": list(node.next),
            "description": "the step to move to",
        }
        defs["Proceed"]["required"] = ["type", "to"]
    if "Delegate" in defs:
        defs["Delegate"]["properties"]["handoff"] = {
            "enum": list(handoffs),
            "description": "the handoff contract to delegate through",
        }
    return OutputSchema(name=name, json_schema=schema)


def _answer_output(node: StepNode | None, bound_claims: bool) -> OutputSchema:
    if node is None:
        return _BOUND_ANSWER if bound_claims else OUTPUT_SCHEMAS["answer"]
    adapter = _GRAPH_ANSWERS[(bound_claims, node.ask_user)]
    return OutputSchema(name="answer", json_schema=_answer_schema(adapter, bound_claims))
