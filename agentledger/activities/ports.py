"""The narrow ports activities call through: packs, their tools and models. Packs implement them;
the composition root hands activities the installed packs (``PackLookup``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, JsonValue
from sqlalchemy.engine import Connection, Engine

from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import AgentProfile, ModelProfile
from agentledger.domain.principal import Principal
from agentledger.domain.tools import EvidencePassage, ResourceRef, ToolContract, VerifiedFact
from agentledger.domain.webhooks import MappedOrder
from agentledger.domain.workorder import WorkGrant, WorkOrder


@dataclass(frozen=True)
class ToolCall:
    operation_id: str
    principal: Principal
    arguments: BaseModel
    idempotency_key: str | None
    now: datetime


@dataclass(frozen=True)
class ToolOutput:
    """What a tool implementation reports; the activity turns it into a Receipt."""

    status: Literal["succeeded", "failed"]
    output: dict[str, JsonValue]
    receipt_id: str | None = None
    facts: tuple[VerifiedFact, ...] = ()
    resources: tuple[ResourceRef, ...] = ()
    evidence: tuple[EvidencePassage, ...] = ()
    error_code: str | None = None
    error_message: str | None = None


class ToolImplementation(Protocol):
    contract: ToolContract

    def execute(self, engine: Engine, call: ToolCall) -> ToolOutput:
        """Run against the system of record. Writes must honour ``call.idempotency_key``."""
        ...

    def reconcile(self, engine: Engine, call: ToolCall) -> ToolOutput | None:
        """For writes: read the system of record by idempotency key; ``None`` if nothing ran."""
        ...


@dataclass(frozen=True)
class ModelUsage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = True


@dataclass(frozen=True)
class ModelReply:
    """Raw structured output; the runtime parses and validates it into a Decision."""

    output: dict[str, JsonValue]
    usage: ModelUsage = field(default_factory=ModelUsage)


class ModelClient(Protocol):
    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply: ...


class ReplyDeltas(Protocol):
    """Told a reply's parts as a provider streams them (``models.ReplyTap``)."""

    def text(self, delta: str) -> None: ...
    def call(self, index: int, name: str | None, delta: str) -> None: ...


@runtime_checkable
class StreamingModelClient(ModelClient, Protocol):
    """A client that can stream: the same reply, its deltas told to ``tap`` as they come."""

    def decide_streaming(
        self, packet: ContextPacket, profile: ModelProfile, tap: ReplyDeltas
    ) -> ModelReply: ...


@dataclass(frozen=True)
class Sample:
    """A request that shows what a pack does (``agentledger demo --pack NAME``): who asks, and
    who in its sample directory approves what the run proposes."""

    request: str
    user_id: str
    approver_id: str


class WebhookMapping(Protocol):
    """A pack's mapping from one webhook source's payload to a run's request and requester
    (``sdk.webhook`` declares one); raises ``PayloadRejected`` for a payload it will not map."""

    @property
    def source(self) -> str: ...

    def order_for(self, payload: object) -> MappedOrder: ...


@dataclass(frozen=True)
class Pack:
    """A domain pack: its agent profile, tools, directory, scripted models and system of record."""

    name: str
    profile: AgentProfile
    tools: Mapping[str, ToolImplementation]
    principals: tuple[Principal, ...]
    models: Mapping[str, ModelClient]
    install: Callable[[Engine], None]
    seed: Callable[[Engine], bool]
    make_work_order: Callable[[str, Principal], WorkOrder]
    policy_version: Callable[[Engine], str]
    sample: Sample | None = None
    profiles: Mapping[str, AgentProfile] = field(default_factory=dict)
    """Further agent profiles of the pack, by id: the children its handoff contracts name."""
    webhooks: Mapping[str, WebhookMapping] = field(default_factory=dict)
    """The webhook sources the pack maps, by source name (``POST /hooks/{pack}/{source}``)."""
    plan_grants: Callable[[WorkOrder], tuple[WorkGrant, ...] | None] | None = None
    """The grants a work order needs, planned from its trusted fields (request, requester) by
    the worker in ``prepare_run``; a work order may only narrow them. ``None``: the pack plans
    none, and a work order's own grants narrow the profile's."""
    sandbox: Callable[[Engine, Connection], None] | None = None
    """Copy the system of record from production (the engine) into a fork's sandbox (the
    connection, whose schema ``install`` made): a fork that is not dry runs its tools there
    (``activities.sandboxes``). ``None``: the pack's forks run dry only."""

    @property
    def contracts(self) -> Mapping[str, ToolContract]:
        return {name: tool.contract for name, tool in self.tools.items()}


class UnknownPack(LookupError):
    pass


PackLookup = Callable[[str], Pack]
"""The installed packs by name; raises ``UnknownPack``."""
