"""agentledger.sdk.testing — what a pack's own tests need, shipped with the SDK.

Three helpers, each doing what the runtime does and nothing more, so a pack is tested through
the same calling convention it runs under:

- ``memory_system(pack)``: an in-memory SQLite system of record with the pack's schema installed
  and its samples seeded (one connection shared by every thread of the test).
- ``run_tool(pack, tool, engine, arguments, principal=..., key=...)``: the arguments checked
  against the tool's contract (a ``pydantic.ValidationError`` for ones the runtime would
  refuse), then the tool run as an activity runs it; ``reconcile_tool`` asks the system of
  record what a write under ``key`` did.
- ``packet(pack, step, said, state)`` and ``packet_view``: the context packet a step's model
  reads, built with the domain's own constructors (validated and hashed): the customer's
  messages (the request first), the step's tools and output schema from the pack's profile, and
  the working state as the runtime renders it (``references``, ``verified_facts`` keyed
  ``"<resource>.<fact>"``, ``completed_actions`` …). ``decide(pack, packet)`` asks the pack's
  own model (a ``ScriptedModel`` or any ``ModelClient`` it ships) for its decision.

A pack test::

    from agentledger.sdk.testing import decide, memory_system, packet, run_tool

    def test_a_ticket_is_closed_once_per_key() -> None:
        engine = memory_system(PACK)
        first = run_tool(PACK, "close_ticket", engine,
                         {"ticket_id": "tkt_1001", "resolution": "fixed"},
                         principal=CUSTOMER, key="k1")
        assert first.status == "succeeded"

    def test_respond_proposes_closing_an_open_ticket() -> None:
        seen = packet(PACK, "respond", ["Close tkt_1001"],
                      {"references": {"ticket_id": "tkt_1001"},
                       "verified_facts": {"tkt_1001.status": {"value": "open"}}})
        assert decide(PACK, seen)["proposed_next_action"] is not None
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from pydantic import JsonValue
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool

from agentledger.activities.ports import Pack, ToolCall, ToolOutput
from agentledger.domain.context import (
    OUTPUT_SCHEMAS,
    ContextItem,
    ContextPacket,
    Section,
    ToolDefinition,
)
from agentledger.domain.context.sections import to_packet_item
from agentledger.domain.principal import Principal
from agentledger.sdk._scripted import PacketView

__all__ = [
    "NOW",
    "decide",
    "memory_system",
    "packet",
    "packet_view",
    "reconcile_tool",
    "run_tool",
]

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)
"""The time a helper uses when a test names none (tools must never read the clock)."""


def memory_system(pack: Pack, *, seed: bool = True) -> Engine:
    """An in-memory system of record with ``pack``'s schema installed and, unless ``seed`` is
    false, its samples inserted (seeding is checked to be once-only: a second seed adds
    nothing, as ``AgentPack.seed`` promises)."""
    engine = create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )
    pack.install(engine)
    if seed and pack.seed(engine) and pack.seed(engine):
        raise AssertionError(f"pack {pack.name!r} seeded its samples twice")
    return engine


def _call(
    pack: Pack,
    tool: str,
    principal: Principal,
    key: str | None,
    now: datetime,
    arguments: Mapping[str, JsonValue],
) -> ToolCall:
    if tool not in pack.tools:
        raise KeyError(
            f"pack {pack.name!r} declares no tool {tool!r} (it has {sorted(pack.tools)})"
        )
    model = pack.tools[tool].contract.input_model.model_validate(dict(arguments))
    return ToolCall(
        operation_id=f"op_{tool}_{key or 'read'}",
        principal=principal,
        arguments=model,
        idempotency_key=key,
        now=now,
    )


def run_tool(
    pack: Pack,
    tool: str,
    engine: Engine,
    arguments: Mapping[str, JsonValue],
    *,
    principal: Principal,
    key: str | None = None,
    now: datetime = NOW,
) -> ToolOutput:
    """Run ``tool`` as the runtime does: arguments validated against its contract, then
    executed with ``principal`` acting, under idempotency ``key`` (a write needs one)."""
    call = _call(pack, tool, principal, key, now, arguments)
    return pack.tools[tool].execute(engine, call)


def reconcile_tool(
    pack: Pack,
    tool: str,
    engine: Engine,
    arguments: Mapping[str, JsonValue],
    *,
    principal: Principal,
    key: str,
    now: datetime = NOW,
) -> ToolOutput | None:
    """What the system of record says a call of ``tool`` under ``key`` did (``None``: it did
    not run, or the tool cannot tell)."""
    call = _call(pack, tool, principal, key, now, arguments)
    return pack.tools[tool].reconcile(engine, call)


def _said(said: Sequence[str], tenant: str | None, now: datetime) -> tuple[ContextItem, ...]:
    return tuple(
        ContextItem.make(
            id=f"turn:{n}" if n else "request:test",
            kind="conversation_turn" if n else "user_request",
            content={"role": "user", "text": text} if n else {"text": text},
            source="run:test" if n else "work_order",
            trust_level="user_claim",
            created_at=now - timedelta(minutes=len(said) - n),
            tenant_id=tenant,
            title="Customer" if n else "User request",
        )
        for n, text in enumerate(said)
    )


def _definitions(pack: Pack, tools: Sequence[str]) -> tuple[ToolDefinition, ...]:
    return tuple(ToolDefinition.from_contract(pack.tools[name].contract) for name in tools)


def packet(
    pack: Pack,
    step: str,
    said: Sequence[str] = (),
    state: Mapping[str, JsonValue] | None = None,
    *,
    now: datetime = NOW,
    tenant: str | None = None,
) -> ContextPacket:
    """The packet ``step`` of ``pack`` reads: ``said`` are the customer's messages (the request
    first), ``state`` the working-state fields it sees (the rest left out)."""
    profile = next((p for p in pack.profile.step_profiles if p.name == step), None)
    if profile is None:
        raise KeyError(f"pack {pack.name!r} has no step {step!r}")
    items = tuple(to_packet_item(i, 0, required=False) for i in _said(said, tenant, now))
    built = ContextPacket(
        step=step,
        policy_version=f"{pack.profile.policy_bundle}:test",
        sections=(Section(name="conversation", category="working", items=items, tokens=0),),
        working_state=dict(state or {}),
        tools=_definitions(pack, profile.allowed_tools),
        proposable_actions=_definitions(pack, profile.proposable_actions),
        output_schema=OUTPUT_SCHEMAS[profile.output_schema],
        omissions=(),
        denied_count=0,
        conflicts=(),
        section_tokens={},
        total_tokens=0,
        token_limit=pack.profile.token_budget.application_limit,
        token_counter="test",
        included_ids=tuple(i.id for i in items),
        cache_key="test",
    )
    return built.model_copy(update={"packet_hash": built.compute_hash()})


def packet_view(
    pack: Pack,
    step: str,
    said: Sequence[str] = (),
    state: Mapping[str, JsonValue] | None = None,
    *,
    now: datetime = NOW,
    tenant: str | None = None,
) -> PacketView:
    """``packet(...)`` as a ``ScriptedModel``'s step functions read it."""
    return PacketView(packet(pack, step, said, state, now=now, tenant=tenant))


def decide(pack: Pack, seen: ContextPacket) -> dict[str, JsonValue]:
    """The decision the pack's own model (the one its profile names) makes on ``seen``."""
    profile = pack.profile.model
    model = pack.models.get(profile.provider)
    if model is None:
        raise KeyError(f"pack {pack.name!r} ships no model for provider {profile.provider!r}")
    return model.decide(seen, profile).output
