"""AgentProfile → ExecutionManifest: the frozen contract one attempt runs under (seed 003).

The manifest's hash is over its canonical JSON; every event carries it, so evidence produced under
one configuration is never mistaken for another's. Changing any component changes the hash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any, Self

from pydantic import Field, model_validator

from agentledger.domain._model import Frozen
from agentledger.domain.assertions import TrustedKey
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import StepProfile, TokenBudget
from agentledger.domain.errors import ManifestError
from agentledger.domain.forks import ForkOrigin
from agentledger.domain.graph import ConversationPolicy, StepGraph, check_graph
from agentledger.domain.handoffs import HandoffContract, HandoffOrigin, check_handoffs
from agentledger.domain.mcp import (
    McpConnectionContract,
    McpServerPin,
    pin_contracts,
    pin_contracts_names,
)
from agentledger.domain.model_calls import unpriced_cost_limit
from agentledger.domain.model_profile import ModelProfile as ModelProfile  # re-exported
from agentledger.domain.tools import Risk, Scope, ToolContract, ToolTerms
from agentledger.domain.workorder import Budget, WorkGrant


class Instruction(Frozen):
    id: str
    text: str


class CompactionPolicy(Frozen):
    """When a long run continues as new: well below Temporal's 51,200 events / 50 MB limits."""

    max_history_events: int = 2_000
    max_history_bytes: int = 4_000_000
    window: int | None = Field(default=None, ge=1)
    """Entries of each history (receipts, decisions, refusals, evidence, turns) a run keeps as it
    continues; the rest stay in the ledger (``domain.window``). ``None``: ``window.WINDOW``."""


class ToolGrant(Frozen):
    """A tool the attempt may use, pinned to its contract version and schema hash."""

    name: str
    version: str
    schema_hash: str
    scope: Scope
    risk: Risk
    steps: tuple[str, ...]

    @classmethod
    def of(cls, contract: ToolContract, steps: Iterable[str]) -> ToolGrant:
        return cls(
            name=contract.name,
            version=contract.version,
            schema_hash=contract.schema_hash,
            scope=contract.scope,
            risk=contract.risk,
            steps=tuple(steps),
        )


class AgentProfile(Frozen):
    """A versioned composition: identity, instructions, model, tools, steps, policy, budgets."""

    profile_id: str
    agent_version: str
    instructions: tuple[Instruction, ...]
    model: ModelProfile
    tool_grants: tuple[ToolGrant, ...]
    step_profiles: tuple[StepProfile, ...]
    token_budget: TokenBudget
    memory_view: str = "none"
    policy_bundle: str
    budgets: Budget = Field(default_factory=Budget)
    evaluation_profile: str = "none"
    approval_ttl_seconds: int = 24 * 3600
    compaction: CompactionPolicy = Field(default_factory=CompactionPolicy)
    mcp_servers: tuple[McpConnectionContract, ...] = ()
    """MCP servers whose allowed tools this agent may use: discovered and pinned per attempt."""
    step_graph: StepGraph | None = None
    """Which step follows which (``None``: the two legacy steps, choose_next_action →
    draft_answer)."""
    conversation: ConversationPolicy | None = None
    """Set for an agent that talks with its customer over days (``None``: one request, one
    answer)."""
    handoffs: tuple[HandoffContract, ...] = ()
    """Work this agent may delegate to other agent profiles (``domain.handoffs``)."""

    @model_validator(mode="after")
    def _graph_runs(self) -> Self:
        if self.step_graph is not None:
            check_graph(
                self.step_graph,
                {s.name: s.output_schema for s in self.step_profiles},
                conversation=self.conversation,
            )
        return self


class ExecutionManifest(Frozen):
    attempt_id: str
    work_order_digest: str
    profile_id: str
    agent_version: str
    model: ModelProfile
    instructions: tuple[Instruction, ...]
    instruction_bundle: str
    tool_grants: tuple[ToolGrant, ...]
    step_profiles: tuple[StepProfile, ...]
    token_budget: TokenBudget
    memory_snapshot: str
    policy_bundle: str
    policy_version: str
    budgets: Budget
    evaluation_profile: str
    approval_ttl_seconds: int
    compaction: CompactionPolicy = Field(default_factory=CompactionPolicy)
    mcp_servers: tuple[McpServerPin, ...] = ()
    step_graph: StepGraph | None = None
    conversation: ConversationPolicy | None = None
    tool_terms: tuple[ToolTerms, ...] = ()
    """Each granted tool's contract as it stood when the attempt started (native and MCP alike):
    the gate, the model's tool definitions and the call's retries follow these, not live code."""
    trusted_keys: tuple[TrustedKey, ...] = ()
    """The keys approvals and customers' replies must be signed with (``domain.assertions``).
    Empty only in manifests frozen before they were: those runs take them as they were recorded."""
    handoffs: tuple[HandoffContract, ...] = ()
    handoff_origin: HandoffOrigin | None = None
    """Set on a child run's manifest: the parent and the contract whose authority bounds it."""
    bound_claims: bool = False
    """An answer's claims name the tool and resource of each receipt they report, and are
    checked against them (``domain.claims``); false only in manifests frozen before, whose runs
    keep the ids-only claims they were recorded with."""
    work_order_grants: tuple[WorkGrant, ...] | None = None
    """The grants this attempt's work order holds: planned by the worker from the request and
    the requester, narrowed by any the work order was sent with (``domain.planning``). ``None``:
    the pack plans none (the work order's own, if any, narrow the profile's), or a manifest
    frozen before grants were planned by the worker, whose run took them as sent."""

    fork_origin: ForkOrigin | None = None
    """Set on a fork's manifest: the run and seq it started from, the state hash it started
    with, who forked it and whether it runs dry (``domain.forks``)."""

    notify_channels: tuple[str, ...] = ()
    """Channels announcing approvals, by name: their addresses stay with the worker."""

    def canonical(self) -> dict[str, Any]:
        """The JSON the hash is over. Fields added since are left out while empty, so manifests
        frozen before they existed keep their hashes (events and ledger rows refer to them)."""
        optional = (
            "mcp_servers", "tool_terms", "step_graph", "conversation", "trusted_keys",
            "handoffs", "handoff_origin", "bound_claims", "fork_origin", "notify_channels",
        )  # fmt: skip
        exclude: dict[str, Any] = {name: True for name in optional if not getattr(self, name)}
        if self.compaction.window is None:
            exclude["compaction"] = {"window"}
        if self.work_order_grants is None:  # () is a plan too: it authorises no tool
            exclude["work_order_grants"] = True
        return self.model_dump(mode="json", exclude=exclude or None)

    @property
    def hash(self) -> str:
        return sha256_hex(self.canonical())

    @cached_property
    def terms(self) -> dict[str, ToolTerms]:
        """The frozen terms by tool name; empty for a manifest frozen before terms were."""
        return {terms.name: terms for terms in self.tool_terms}

    def tool_contracts(self, native: Mapping[str, ToolContract]) -> dict[str, ToolContract]:
        """For a manifest that froze no terms: the pack's contracts as deployed now and those of
        its pinned MCP servers (derived from the pins alone, never from a live server)."""
        return {**native, **_pinned_contracts(self.mcp_servers)}

    def pins(self, tool: str) -> bool:
        """Whether ``tool`` is an MCP tool of a server this manifest pins."""
        return any(tool in pin_contracts_names(pin) for pin in self.mcp_servers)

    def grant(self, tool: str) -> ToolGrant | None:
        return next((g for g in self.tool_grants if g.name == tool), None)

    def handoff(self, name: str) -> HandoffContract | None:
        return next((h for h in self.handoffs if h.name == name), None)

    def handoffs_at(self, step: str) -> tuple[str, ...]:
        """The handoff contracts ``step`` may delegate through."""
        return tuple(h.name for h in self.handoffs if step in h.steps)

    def step(self, name: str) -> StepProfile:
        for profile in self.step_profiles:
            if profile.name == name:
                return profile
        raise ManifestError(f"manifest has no step profile {name!r}")


def _pinned_contracts(pins: Iterable[McpServerPin]) -> dict[str, ToolContract]:
    return {name: c for pin in pins for name, c in pin_contracts(pin).items()}


def _frozen_terms(
    grants: Iterable[ToolGrant], contracts: Mapping[str, ToolContract]
) -> tuple[ToolTerms, ...]:
    """The terms of every granted tool that has a contract. A grant without one, or pinning
    another version, stays as it is: the gate refuses its calls (``unknown_tool``,
    ``contract_changed``), as it did when it read live contracts."""
    return tuple(contracts[g.name].terms() for g in grants if g.name in contracts)


def _granted(profile: AgentProfile, mcp_pins: tuple[McpServerPin, ...]) -> tuple[ToolGrant, ...]:
    """The profile's grants and its pinned servers' tools, each for steps the profile has."""
    pinned = tuple(pin.connection for pin in mcp_pins)
    if pinned != profile.mcp_servers:
        raise ManifestError(
            f"MCP pins {[c.name for c in pinned]} do not match the profile's servers "
            f"{[c.name for c in profile.mcp_servers]}"
        )
    mcp_grants = tuple(
        ToolGrant.of(contract, pin.connection.steps)
        for pin in mcp_pins
        for contract in pin_contracts(pin).values()
    )
    tool_grants = profile.tool_grants + mcp_grants
    step_names = {s.name for s in profile.step_profiles}
    for grant in tool_grants:
        unknown = set(grant.steps) - step_names
        if unknown:
            raise ManifestError(f"grant {grant.name} names unknown steps {sorted(unknown)}")
    return tool_grants


_FROZEN_AS_IS = (  # the profile's fields a manifest freezes exactly as the profile states them
    "profile_id", "agent_version", "model", "instructions", "step_profiles", "token_budget",
    "policy_bundle", "budgets", "evaluation_profile", "approval_ttl_seconds", "compaction",
    "step_graph", "conversation", "handoffs",
)  # fmt: skip


def _checked_grants(
    profile: AgentProfile, mcp_pins: tuple[McpServerPin, ...], origin: HandoffOrigin | None
) -> tuple[ToolGrant, ...]:
    """The grants (a child run's narrowed to its authority) once cost limits and handoffs check."""
    if (price_problem := unpriced_cost_limit(profile.model, profile.budgets)) is not None:
        raise ManifestError(price_problem)
    granted = _granted(profile, mcp_pins)
    tool_grants = tuple(g for g in granted if origin is None or g.name in origin.authority)
    check_handoffs(
        profile.handoffs, (g.name for g in tool_grants), (s.name for s in profile.step_profiles)
    )
    return tool_grants


def resolve_manifest(
    profile: AgentProfile,
    *,
    contracts: Mapping[str, ToolContract],
    attempt_id: str,
    work_order_digest: str,
    memory_snapshot: str,
    policy_version: str,
    mcp_pins: tuple[McpServerPin, ...] = (),
    trusted_keys: tuple[TrustedKey, ...] = (),
    handoff_origin: HandoffOrigin | None = None,
    work_order_grants: tuple[WorkGrant, ...] | None = None,
    fork_origin: ForkOrigin | None = None,
    notify_channels: tuple[str, ...] = (),
) -> ExecutionManifest:
    """Freeze a profile for one attempt. Mutable inputs arrive already resolved to digests;
    each MCP server in the profile arrives as the pin discovery made of it; ``contracts`` are
    the pack's tool contracts, whose granted terms are frozen; ``trusted_keys`` are the keys
    the worker trusts to sign decisions and replies now (a rotation changes no running attempt).
    ``handoff_origin``: set for a child run, whose grants are narrowed to its authority. A
    handoff contract whose authority is wider than the grants raises ``HandoffAuthorityError``."""
    tool_grants = _checked_grants(profile, mcp_pins, handoff_origin)
    return ExecutionManifest(
        **{name: getattr(profile, name) for name in _FROZEN_AS_IS},
        attempt_id=attempt_id,
        work_order_digest=work_order_digest,
        instruction_bundle=sha256_hex([i.model_dump() for i in profile.instructions]),
        tool_grants=tool_grants,
        memory_snapshot=memory_snapshot,
        policy_version=policy_version,
        mcp_servers=mcp_pins,
        tool_terms=_frozen_terms(tool_grants, {**contracts, **_pinned_contracts(mcp_pins)}),
        trusted_keys=trusted_keys,
        handoff_origin=handoff_origin,
        bound_claims=True,
        work_order_grants=work_order_grants,
        fork_origin=fork_origin,
        notify_channels=notify_channels,
    )
