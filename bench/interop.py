"""Interoperability with real peers: ``python -m bench.interop``.

Provider cases run the ``openai_compatible`` client against (1) the local chat-completions
server scripted with recorded replies, garbage, 429, 500 and a timeout, and (2) a real llama.cpp
server (xllamacpp) running SmolLM2-135M from PyPI: direct decisions, then one governed run on an
embedded Temporal stack. A case passes when the plumbing holds (a valid decision or a recorded
rejection, the right typed error, governance intact); answer quality is never judged.
MCP cases (``bench._interop_mcp``) run server-everything over stdio inside real runs: reads
through the gate, a write denied for a missing scope, an elicitation answered by a human.
Prints one line per case, then a final JSON line.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from temporalio.exceptions import ApplicationError

from agentledger.activities.models import MALFORMED, ProviderClient, model_clients
from agentledger.activities.models import openai_compatible_profile as profile_for
from agentledger.activities.ports import ModelReply
from agentledger.app.devserver import stop_dev_server
from agentledger.domain import events as ev
from agentledger.domain.decisions import Decision
from agentledger.domain.workorder import Budget
from bench._interop_mcp import mcp_cases
from bench._stack import start_dev_server
from bench.providers import packets
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.llama_peer import LlamaPeer
from bench.providers.recorded import LLAMA_CPP_REPLY, calls, decision, error, tool_call
from bench.providers.runs import provider_harness, run_to_end

_DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)
Check = Callable[[ModelReply | ApplicationError], bool]


def _valid(result: ModelReply | ApplicationError) -> bool:
    if not isinstance(result, ModelReply):
        return False
    try:
        _DECISION.validate_python(result.output)
    except ValidationError:
        return False
    return True


def _rejected(result: ModelReply | ApplicationError) -> bool:
    return isinstance(result, ModelReply) and result.output.get("type") == MALFORMED


def _error(kind: str, retryable: bool) -> Check:
    def check(result: ModelReply | ApplicationError) -> bool:
        return (
            isinstance(result, ApplicationError)
            and result.type == kind
            and result.non_retryable is not retryable
        )

    return check


LOCAL_CASES: list[tuple[str, Reply, Check, dict[str, Any]]] = [
    ("recorded_structured", decision({"type": "proceed_to_answer"}), _valid, {}),
    ("recorded_tool_call", calls(tool_call("get_order", {"order_id": "ord_4821"})), _valid, {}),
    ("recorded_llama_cpp", Reply(body=LLAMA_CPP_REPLY), _valid, {}),
    ("garbage_body", Reply(body=b"<html>bad gateway</html>"), _rejected, {}),
    ("http_429", error(429, "slow", **{"Retry-After": "1"}), _error("ModelRateLimited", True), {}),
    ("http_500", error(500, "overloaded"), _error("ModelServerError", True), {}),
    ("http_401", error(401, "bad key"), _error("ModelRequestRejected", False), {}),
    ("timeout", Reply(body={}, delay=0.6), _error("ModelTimeout", True), {"timeout_seconds": 0.2}),
]


Result = ModelReply | ApplicationError


def _call(client: ProviderClient, packet: Any, profile: Any) -> Result:
    try:
        return client.decide(packet, profile)
    except ApplicationError as exc:
        return exc


def local_cases(report: Callable[..., None]) -> None:
    server, client = ChatServer(), ProviderClient(environ={})
    try:
        for name, reply, check, settings in LOCAL_CASES:
            server.script(reply)
            profile = profile_for(server.url, "m", **settings)
            result = _call(client, packets.choose_next_action(), profile)
            report(f"local:{name}", check(result))
    finally:
        client.close()
        server.close()


def llama_cases(peer: LlamaPeer, report: Callable[..., None]) -> None:
    client = ProviderClient(environ={})
    try:
        for name in ("choose_next_action", "draft_answer"):
            packet = getattr(packets, name)()
            started = time.perf_counter()
            result = _call(client, packet, peer.profile())
            seconds = time.perf_counter() - started
            ok = (_valid(result) or _rejected(result)) and isinstance(result, ModelReply)
            usage = result.usage if isinstance(result, ModelReply) else None
            report(
                f"llama_cpp:{name}",
                ok and usage is not None and not usage.estimated,
                seconds=round(seconds, 1),
                valid_decision=_valid(result),
                provider_input_tokens=usage.input_tokens if usage else None,
                cached_tokens=usage.cached_tokens if usage else None,
                estimate_tokens=packet.total_tokens,
            )
    finally:
        client.close()


async def llama_run(peer: LlamaPeer, report: Callable[..., None]) -> None:
    with tempfile.TemporaryDirectory(prefix="agentledger-interop-") as tmp:
        data_dir = Path(tmp)
        server = start_dev_server(data_dir / "temporal")
        try:
            async with provider_harness(server, data_dir, peer.profile(), model_clients()) as h:
                started = time.perf_counter()
                events = await run_to_end(h, budget=Budget(steps=4, tool_calls=3), timeout=600)
        finally:
            stop_dev_server(data_dir / "temporal")
    unapproved = [
        e
        for e in events
        if isinstance(e, ev.ToolCallAuthorised)
        and e.approval_id is None
        and e.tool not in {"get_order", "get_customer", "search_returns_policy"}
    ]
    report(
        "llama_cpp:governed_run",
        events[-1].kind in ("run_completed", "run_failed") and not unapproved,
        seconds=round(time.perf_counter() - started, 1),
        ended=events[-1].kind,
        decisions=sum(isinstance(e, ev.DecisionRecorded) for e in events),
        rejections=sum(isinstance(e, ev.DecisionRejected) for e in events),
        denials=sum(isinstance(e, ev.ToolCallDenied) for e in events),
    )


def main() -> None:
    results: list[bool] = []

    def report(name: str, ok: bool, **figures: Any) -> None:
        results.append(ok)
        print(f"{'pass' if ok else 'FAIL'}  {name}  {json.dumps(figures) if figures else ''}")

    local_cases(report)
    with LlamaPeer() as peer:
        llama_cases(peer, report)
        asyncio.run(llama_run(peer, report))
    provider_total = len(results)
    mcp_figures = asyncio.run(mcp_cases(report))
    summary = {
        "provider_cases_passed": sum(results[:provider_total]),
        "provider_cases_total": provider_total,
        "provider_peers": ["local chat-completions server", "llama.cpp (xllamacpp) SmolLM2-135M"],
        **mcp_figures,
        "mcp_cases_passed": sum(results[provider_total:]),
        "mcp_cases_total": len(results) - provider_total,
        "mcp_peer": "@modelcontextprotocol/server-everything 2.0.0 (npm, stdio)",
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
