"""A model step's two halves beside the model call: the context packet it is sent (candidates
from the run's state, compiled under the attempt's manifest) and what its reply becomes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
from pydantic import JsonValue, TypeAdapter, ValidationError

from agentledger.activities.ports import ModelReply, Pack
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context import (
    BpeTokenCounter,
    ContextItem,
    ContextPacket,
    ToolDefinition,
    build_context,
    candidates_from_state,
    decision_schema,
    model_counter,
)
from agentledger.domain.decisions import Decision
from agentledger.domain.limits import bounded_raw, unencodable_problem
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.model_calls import (
    ModelStepResult,
    PacketSummary,
    TokenUsage,
    priced_call,
)
from agentledger.domain.state import WorkingState

_DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)


def build_step_packet(
    pack: Pack,
    manifest: ExecutionManifest,
    step: str,
    state: WorkingState,
    now: datetime,
    memories: Sequence[ContextItem] = (),
) -> ContextPacket:
    """The packet for one step: candidates from the state, compiled under the manifest."""
    assert state.work_order is not None
    candidates = [
        *candidates_from_state(state, _instructions(manifest, step, now), now),
        *_observations(state),
        *memories,
    ]
    profile = manifest.step(step)
    graph = manifest.step_graph
    return build_context(
        profile,
        state.work_order.principal,
        state,
        candidates,
        manifest.policy_version,
        manifest.token_budget,
        now,
        tool_definitions=_granted_definitions(pack, manifest),
        model_settings_digest=sha256_hex(manifest.model.canonical()),
        counter=step_counter(manifest),
        output_schema=decision_schema(
            profile.output_schema,
            graph.node(step) if graph is not None else None,
            manifest.handoffs_at(step),
            manifest.bound_claims,
        ),
    )


def step_counter(manifest: ExecutionManifest) -> BpeTokenCounter:
    model = manifest.model
    return model_counter(model.encoding, f"{model.provider}:{model.model}")


def _instructions(manifest: ExecutionManifest, step: str, now: datetime) -> list[ContextItem]:
    return [
        ContextItem.make(
            id=i.id,
            kind="instruction",
            content=i.text,
            source=f"instructions@{manifest.instruction_bundle[:19]}",
            trust_level="instruction",
            created_at=now,
            required_for_step=(step,),
        )
        for i in manifest.instructions
    ]


def _observations(state: WorkingState) -> list[ContextItem]:
    """The latest model view of each tool: observations, never instructions."""
    return [
        ContextItem.make(
            id=f"obs:{o.operation_id}",
            kind="tool_result",
            content=o.model_view,
            source=f"tool:{o.tool}",
            trust_level="tool_observation",
            created_at=o.observed_at,
            title=f"{o.tool} result",
        )
        for o in state.observations.values()
    ]


def _granted_definitions(pack: Pack, manifest: ExecutionManifest) -> dict[str, ToolDefinition]:
    """The definitions of the tools the manifest grants, from its frozen terms."""
    contracts = manifest.terms or manifest.tool_contracts(pack.contracts)
    return {
        name: ToolDefinition.from_contract(c)
        for name, c in contracts.items()
        if manifest.grant(name) is not None
    }


def packet_summary(packet: ContextPacket) -> PacketSummary:
    citable = set(packet.included_ids) | {item.source for item in packet.items()}
    return PacketSummary(
        packet_hash=packet.packet_hash,
        cache_key=packet.cache_key,
        section_tokens=packet.section_tokens,
        total_tokens=packet.total_tokens,
        omission_count=len(packet.omissions),
        included_ids=packet.included_ids,
        citable_ids=tuple(sorted(citable)),
    )


def decided(
    reply: ModelReply,
    packet: ContextPacket,
    manifest: ExecutionManifest,
    *,
    route: int = 0,
    attempt: int = 1,
) -> ModelStepResult:
    """The step's result: what it cost, and the decision the reply holds or why it holds none.
    ``route``: which of the model's chain answered; ``attempt``: the activity's attempt."""
    usage = reply.usage
    if not usage.estimated and usage.input_tokens > 0 and packet.total_tokens > 0:
        # The provider's count corrects this encoding's estimates for the next packets.
        step_counter(manifest).calibrate(packet.total_tokens, usage.input_tokens)
    used = TokenUsage(
        input_tokens=usage.input_tokens,
        cached_tokens=usage.cached_tokens,
        output_tokens=usage.output_tokens,
        reported=not usage.estimated,
    )
    provider, model, price = manifest.model.route(route)
    charged = ModelStepResult(
        packet=packet_summary(packet),
        tokens_used=usage.input_tokens + usage.output_tokens or packet.total_tokens,
        usage=used,
        call=priced_call(provider, model, used, price, attempt=attempt, route=route),
    )
    return charged.model_copy(update=_judged(reply.output))


def _judged(output: dict[str, JsonValue]) -> dict[str, Any]:
    """The decision ``output`` holds, or why it holds none (and the reply as received)."""
    if output.get("type") == "malformed_reply":
        problem, raw = output.get("problem"), output.get("raw")
        return {
            "rejection": f"model reply unusable: {problem}",
            "raw_reply": bounded_raw(raw if isinstance(raw, str) else ""),
        }
    unencodable = unencodable_problem(output, "the model's output")
    if unencodable is not None:  # it could be neither returned, recorded nor shown
        return {"rejection": f"model reply unusable: {unencodable}"}
    try:
        return {"decision": _DECISION.validate_python(output)}
    except ValidationError as exc:
        rejection = (
            f"model output is not a valid decision: {exc.error_count()} error(s), "
            f"first: {exc.errors()[0]['msg']}"
        )
        return {"rejection": rejection, "raw_reply": bounded_raw(_as_text(output))}


def _as_text(output: object) -> str:
    """The rejected reply as JSON text; what orjson refuses (integers beyond 64 bits, lone
    surrogates) the standard library writes with escapes, so a bad reply is recorded, not lost."""
    try:
        return orjson.dumps(output).decode()
    except TypeError:
        return json.dumps(output, default=repr)
