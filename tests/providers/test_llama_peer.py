"""A real model behind the same client: llama.cpp serving SmolLM2-135M over HTTP on 127.0.0.1.

Only plumbing is asserted — the model is tiny and often wrong. Every reply must be a valid
decision or a recorded rejection, provider usage must be reported, and governance must hold
whatever the model proposes. Runs in CI (the `real_model` marker only labels it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from agentledger.activities.models import ProviderClient, model_clients
from agentledger.app.devserver import DevServer
from agentledger.domain import events as ev
from agentledger.domain.decisions import Decision
from agentledger.domain.workorder import Budget
from bench.providers import packets
from bench.providers.llama_peer import LlamaPeer
from bench.providers.runs import provider_harness, run_to_end

pytestmark = pytest.mark.real_model

DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)
GRANTED_FOR = {"choose_next_action": {"get_order", "get_customer", "search_returns_policy"}}


def test_a_reply_is_a_decision_or_a_rejectable_output_with_real_usage(
    llama_peer: LlamaPeer,
) -> None:
    client = ProviderClient(environ={})
    try:
        # Called directly, not under the workflow's activity timeout: sized for a first,
        # uncached prompt on a busy 2-core machine (63 s measured at load 12).
        profile = llama_peer.profile(timeout_seconds=300.0)
        reply = client.decide(packets.choose_next_action(), profile)
    finally:
        client.close()
    try:
        DECISION.validate_python(reply.output)
    except ValidationError:
        # Not a decision: the model step turns exactly this into a DecisionRejected event.
        assert isinstance(reply.output, dict) and reply.output
    assert reply.usage.estimated is False
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


@pytest.mark.temporal
async def test_a_run_decided_by_the_real_model_keeps_governance_intact(
    temporal_server: DevServer, tmp_path: Path, llama_peer: LlamaPeer
) -> None:
    budget = Budget(steps=4, tool_calls=3, tokens=60_000)
    async with provider_harness(
        temporal_server, tmp_path, llama_peer.profile(), model_clients()
    ) as harness:
        events = await run_to_end(harness, budget=budget, approve=False, timeout=600)

    assert events[-1].kind in ("run_completed", "run_failed")
    steps = [e for e in events if isinstance(e, ev.StepStarted)]
    outcomes = [
        e for e in events if isinstance(e, ev.DecisionRecorded | ev.DecisionRejected | ev.RunFailed)
    ]
    assert steps and len(outcomes) >= len(steps)
    for event in events:
        if isinstance(event, ev.ToolCallAuthorised):
            # Nothing the model said widened a grant, and no consequential call ran unapproved.
            assert event.approval_id is not None or event.tool in GRANTED_FOR["choose_next_action"]
    assert not any(
        isinstance(e, ev.ToolReceiptRecorded) and e.receipt.tool == "create_refund" for e in events
    )
    charged = [e for e in events if isinstance(e, ev.BudgetCharged) and e.tokens]
    assert charged and all(e.tokens > 0 for e in charged)
    # llama.cpp reports usage: the counts are the server's, not the packet's estimate.
    reported = [e for e in charged if e.usage_reported]
    assert reported and all(e.input_tokens > 0 for e in reported)
