"""Every bad input ends: hostile model output, oversized or deeply nested requests and unknown
packs each finish the run with a typed, recorded outcome, never a workflow task that fails on
every retry. Inputs are drawn by hypothesis and sent the way an attacker would (a raw client)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue
from temporalio.client import Client

from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack, register_pack
from agentledger.domain.context import ContextPacket
from agentledger.domain.events import DecisionRejected, RunEvent, RunFailed
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.workorder import ArgumentBound, WorkGrant, WorkOrder
from agentledger.packs.support import PACK as SUPPORT
from agentledger.packs.support.playbook import Playbook
from agentledger.workflows import AgentRunWorkflow, RunInput
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal

SCRIPTS: dict[str, dict[str, JsonValue]] = {}
"""What the hostile model answers for each order id; the playbook answers the rest."""
CALLS: dict[str, int] = {}
"""How often the hostile model was asked to decide, per scripted order id."""


class ScriptedModel:
    def __init__(self) -> None:
        self._playbook = Playbook()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        references = packet.working_state.get("references")
        order = references.get("order_id") if isinstance(references, dict) else None
        output = SCRIPTS.get(order) if isinstance(order, str) else None
        if output is None:
            return self._playbook.decide(packet, profile)
        assert isinstance(order, str)
        CALLS[order] = CALLS.get(order, 0) + 1
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


HOSTILE = replace(
    SUPPORT,
    name="support_hostile",
    profile=SUPPORT.profile.model_copy(
        update={"model": SUPPORT.profile.model.model_copy(update={"provider": "hostile"})}
    ),
    models={"hostile": ScriptedModel()},
    make_work_order=lambda request, principal: SUPPORT.make_work_order(
        request, principal
    ).model_copy(update={"pack": "support_hostile"}),
)
register_pack(HOSTILE.name, f"{__name__}:HOSTILE")


def _nested(depth: int, leaf: JsonValue = "ord_4821") -> JsonValue:
    for i in range(depth):
        leaf = {"k": leaf} if i % 2 else [leaf]
    return leaf


def _call(tool: str, arguments: JsonValue) -> dict[str, JsonValue]:
    return {"type": "call_tool", "proposal": {"tool": tool, "arguments": arguments}}


def _refund(amount: JsonValue) -> dict[str, JsonValue]:
    arguments: dict[str, JsonValue] = {
        "order_id": "ord_4821",
        "amount": amount,
        "currency": "EUR",
        "reason": "late delivery",
    }
    return {
        "type": "answer",
        "answer": "Refunding you.",
        "proposed_next_action": {"tool": "create_refund", "arguments": arguments},
    }


HOSTILE_OUTPUT = st.one_of(
    st.integers(150, 300).map(lambda d: _call("get_order", {"order_id": _nested(d)})),
    st.integers(1_100_000, 1_300_000).map(lambda n: {"type": "answer", "answer": "x" * n}),
    st.integers(1_100_000, 1_600_000).map(
        lambda n: {"type": "proceed_to_answer", "rationale": "y" * n}
    ),
    st.sampled_from([True, 0.001, "42.50", -1, 1e308, None]).map(_refund),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=30,
    ).map(lambda junk: {"type": "call_tool", "proposal": junk}),
)

# One bound for every run: the hostile model gets at most the profile's 12 steps.
TERMINAL_WITHIN_SECONDS = 120


async def _ended(client: Client, run_id: str) -> dict[str, Any]:
    handle = client.get_workflow_handle(run_id)
    result: dict[str, Any] = await asyncio.wait_for(handle.result(), TERMINAL_WITHIN_SECONDS)
    return result


def _failure(events: list[RunEvent]) -> RunFailed | None:
    return next((e for e in events if isinstance(e, RunFailed)), None)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(output=HOSTILE_OUTPUT, order=st.integers(10_000, 99_999))
async def test_any_model_output_ends_the_run(
    harness: Harness, output: dict[str, JsonValue], order: int
) -> None:
    SCRIPTS[f"ord_{order}"] = output
    request = f"Can I get a refund for order ord_{order}? It arrived late."
    work_order = HOSTILE.make_work_order(request, harness.principal("usr_73"))
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    result = await _ended(harness.client, handle.id)
    events = harness.runtime.ledger.read(handle.id)
    assert result["status"] in ("completed", "failed")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].kind in ("run_completed", "run_failed")


BEYOND_64_BITS = st.integers(min_value=2**64) | st.integers(max_value=-(2**63) - 1)
LARGE_INTEGER_OUTPUT = st.one_of(
    BEYOND_64_BITS.map(lambda n: _call("get_order", {"order_id": "ord_4821", "page": n})),
    BEYOND_64_BITS.map(lambda n: _call("get_order", {"order_id": [n]})),
    BEYOND_64_BITS.map(_refund),
)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(output=LARGE_INTEGER_OUTPUT, order=st.integers(10_000, 99_999))
# Refused when the reply is parsed, before any digest, packet or state hash would have to encode it.
@example(output=_refund(2**64), order=10_001)
@example(output=_call("get_order", {"order_id": -(2**63) - 1}), order=10_002)
async def test_a_decision_carrying_an_integer_beyond_64_bits_is_rejected_and_recorded(
    harness: Harness, output: dict[str, JsonValue], order: int
) -> None:
    SCRIPTS[f"ord_{order}"] = output
    request = f"Can I get a refund for order ord_{order}? It arrived late."
    work_order = HOSTILE.make_work_order(request, harness.principal("usr_73"))
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    await _ended(harness.client, handle.id)
    events = harness.runtime.ledger.read(handle.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].kind in ("run_completed", "run_failed")
    rejected = [e for e in events if isinstance(e, DecisionRejected)]
    assert rejected and all("beyond 64 bits" in e.detail for e in rejected)


LONE_SURROGATE = "\ud800"
"""A string Python holds but no UTF-8 (nor JSON) can carry: a model's broken output."""


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("order", "output"),
    [
        ("ord_10101", {"type": "answer", "answer": f"Refunded {LONE_SURROGATE}."}),
        ("ord_10102", _call("get_order", {"order_id": f"ord_1{LONE_SURROGATE}"})),
    ],
)
async def test_model_output_that_cannot_be_serialised_is_a_recorded_rejection_not_a_retry(
    harness: Harness, order: str, output: dict[str, JsonValue]
) -> None:
    SCRIPTS[order] = output
    request = f"Can I get a refund for order {order}? It arrived late."
    work_order = HOSTILE.make_work_order(request, harness.principal("usr_73"))
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    await _ended(harness.client, handle.id)
    events = harness.runtime.ledger.read(handle.id)
    rejected = [e for e in events if isinstance(e, DecisionRejected)]
    assert rejected and all(e.reason_code == "malformed_model_output" for e in rejected)
    assert all("lone surrogate" in e.detail for e in rejected)
    assert CALLS[order] == len(rejected)  # one model call per recorded rejection: no retries
    assert events[-1].kind in ("run_completed", "run_failed")


async def _raw_start(harness: Harness, work_order: WorkOrder, run_id: str) -> None:
    """Past the client's own checks, as an attacker with frontend access would start a run."""
    await harness.client.start_workflow(
        AgentRunWorkflow.run,
        RunInput(run_id=run_id, work_order=work_order),
        id=run_id,
        task_queue=harness.settings.task_queue,
    )


def _huge_request(order: WorkOrder) -> WorkOrder:
    return order.model_copy(update={"request_text": "refund me " * 150_000})  # 1.5 MB


def _deep_grant(order: WorkOrder, depth: int = 40) -> WorkOrder:
    bound = ArgumentBound(argument="order_id", allowed=(_nested(depth),))
    return order.model_copy(update={"grants": (WorkGrant(tool="get_order", bounds=(bound,)),)})


def _undecodable_grant(order: WorkOrder) -> WorkOrder:
    # Deeper than pydantic's JSON parser goes: the workflow input itself does not decode.
    return _deep_grant(order, depth=240)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("spoil", "reason", "recorded"),
    [
        (_huge_request, "exceed", "exceed"),
        (_deep_grant, "deeper", "deeper"),
        (_undecodable_grant, "deeper", "cannot be decoded"),
    ],
)
async def test_an_oversized_or_deep_work_order_is_refused_and_recorded(
    harness: Harness, spoil: Any, reason: str, recorded: str
) -> None:
    order = spoil(get_pack("support").make_work_order(REQUEST, harness.principal("usr_73")))
    with pytest.raises(Refused, match=reason):
        await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )

    await _raw_start(harness, order, "run_spoiled")
    result = await _ended(harness.client, "run_spoiled")
    events = harness.runtime.ledger.read("run_spoiled")
    assert result["status"] == "failed"
    assert [e.kind for e in events] == ["run_started", "run_failed"]
    failed = _failure(events)
    assert failed is not None and failed.reason_code == "work_order_refused"
    assert recorded in failed.message


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_an_unknown_pack_fails_the_run_at_preparation(harness: Harness) -> None:
    order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    await _raw_start(harness, order.model_copy(update={"pack": "no_such_pack"}), "run_nopack")
    await _ended(harness.client, "run_nopack")
    failed = _failure(harness.runtime.ledger.read("run_nopack"))
    assert failed is not None and failed.reason_code == "preparation_failed"
    assert "UnknownPack" in failed.message
