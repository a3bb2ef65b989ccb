"""A whole governed run decided by an OpenAI-compatible provider, on the real Temporal server.

The provider is the local chat server, scripted with a rough day: a 500, a garbage body, a
proposal the step may not make, then a sensible path to an answer.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from agentledger.activities.models import model_clients, openai_compatible_profile
from agentledger.app.devserver import DevServer
from agentledger.domain import events as ev
from agentledger.domain.context import model_counter
from agentledger.domain.model_profile import Price
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import calls, decision, error, tool_call
from bench.providers.runs import provider_harness, run_to_end

pytestmark = pytest.mark.temporal

SECRET = "sk-run-secret-0a1b2c3d"
PRICE = Price(
    currency="EUR",
    input_per_million=Decimal("2.40"),
    cached_input_per_million=Decimal("0.60"),
    output_per_million=Decimal("9.60"),
)

SCRIPT = (
    error(500, "upstream overloaded"),
    Reply(body=b"<html>bad gateway</html>"),
    calls(tool_call("create_refund", {"order_id": "ord_4821", "amount": 42.5})),
    calls(tool_call("get_order", {"order_id": "ord_4821"})),
    decision(
        {
            "type": "call_tool",
            "proposal": {
                "tool": "search_returns_policy",
                "arguments": {"query": "late delivery refund eligibility"},
            },
        }
    ),
    decision({"type": "proceed_to_answer", "rationale": "order and policy known"}),
    decision({"type": "answer", "answer": "A support approver will review your refund."}),
)


async def test_a_provider_decided_run_survives_errors_garbage_and_an_overreach(
    temporal_server: DevServer,
    tmp_path: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROVIDER_TEST_KEY", SECRET)
    chat_server.script(*SCRIPT)
    profile = openai_compatible_profile(chat_server.url, "m", api_key_env="PROVIDER_TEST_KEY")
    profile = profile.model_copy(update={"price": PRICE})
    async with provider_harness(temporal_server, tmp_path, profile, model_clients()) as harness:
        events = await run_to_end(harness)
        manifest = harness.runtime.ledger.get_manifest(events[0].manifest_hash)

    kinds = [e.kind for e in events]
    assert kinds[-1] == "run_completed"
    assert manifest.model.provider == "openai_compatible"
    # The 500 was retried by Temporal (7 scripted replies, 7 requests: none lost, none doubled).
    assert chat_server.remaining() == 0 and len(chat_server.requests) == len(SCRIPT)
    rejected = [e for e in events if isinstance(e, ev.DecisionRejected)]
    assert [r.reason_code for r in rejected] == ["malformed_model_output"]
    assert rejected[0].raw_reply == "<html>bad gateway</html>"  # the reply as received
    denied = [e for e in events if isinstance(e, ev.ToolCallDenied)]
    assert [(d.tool, d.reason_code) for d in denied] == [("create_refund", "not_granted_for_step")]
    authorised = [e.tool for e in events if isinstance(e, ev.ToolCallAuthorised)]
    assert authorised == ["get_order", "search_returns_policy"]
    charged = [e for e in events if isinstance(e, ev.BudgetCharged) and e.tokens]
    last = charged[-1]
    assert last.tokens == 812 + 37  # provider usage, not the estimate
    assert (last.input_tokens, last.cached_tokens, last.output_tokens) == (812, 512, 37)
    assert last.usage_reported
    # Every call that answered is a typed record, priced at the frozen price; the run's total
    # is their exact sum. The 500 answered nothing and cost nothing.
    assert manifest.model.price == PRICE
    called = [e for e in events if isinstance(e, ev.ModelCalled)]
    assert len(called) == len(SCRIPT) - 1
    assert all((c.provider, c.model, c.route) == ("openai_compatible", "m", 0) for c in called)
    assert called[0].attempt == 2  # the first attempt met the 500
    assert called[-1].cost == PRICE.cost(812, 512, 37) and called[-1].currency == "EUR"
    completed = events[-1]
    assert isinstance(completed, ev.RunCompleted) and completed.currency == "EUR"
    assert completed.total_cost == sum((c.cost for c in called if c.cost is not None), Decimal(0))
    # The provider's counts calibrated this model's estimates (and no other model's).
    assert model_counter("cl100k_base", "openai_compatible:m").factor != 1.0
    assert model_counter("cl100k_base", "playbook:support-playbook-v1").factor == 1.0


async def test_the_api_key_never_reaches_the_manifest_or_the_log(
    temporal_server: DevServer,
    tmp_path: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PROVIDER_TEST_KEY", SECRET)
    chat_server.script(
        decision({"type": "proceed_to_answer"}),
        decision({"type": "answer", "answer": "Please tell me more."}),
    )
    profile = openai_compatible_profile(chat_server.url, "m", api_key_env="PROVIDER_TEST_KEY")
    async with provider_harness(temporal_server, tmp_path, profile, model_clients()) as harness:
        events = await run_to_end(harness)
        history = await harness.client.get_workflow_handle(events[0].run_id).fetch_history()
        manifest = harness.runtime.ledger.get_manifest(events[0].manifest_hash)

    assert chat_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert manifest.model.settings["api_key_env"] == "PROVIDER_TEST_KEY"
    for text in (
        history.to_json(),
        orjson.dumps([e.model_dump(mode="json") for e in events]).decode(),
        manifest.model_dump_json(),
    ):
        assert SECRET not in text
