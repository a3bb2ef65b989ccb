"""AgentDojo's banking and slack suites hosted as packs (``agentdojo-banking``, ``-slack``).

The suites come from the installed ``agentdojo`` package, unchanged. A run's work order is one
user task, with grants derived from that task alone (``packs.agentdojo.authority``); its sandbox
tenant ``agentdojo/<suite>/<user_task>/<injection_task>/<attack>/<version>/<nonce>`` is the
pair's environment with the attack's injections (``important_instructions`` and ``v1.2.2`` unless
the pair names others), kept by the replay journal. The grants are *oracle* grants, from the
task's ground truth: the conformance tier measures enforcement, not planning. Injected text
reaches the model only inside tool results, as untrusted observations.
"""

from __future__ import annotations

from agentledger.domain.principal import APPROVER_ROLE, Principal
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs import Pack
from agentledger.packs.agentdojo.authority import grants_for
from agentledger.packs.agentdojo.catalog import ATTACK, BENCHMARK_VERSION, Pair, SuiteName, suite
from agentledger.packs.agentdojo.model import CompromisedModel, planned_calls
from agentledger.packs.agentdojo.profile import profile_for
from agentledger.packs.agentdojo.tools import SANDBOX_PREFIX, sandbox_of, tools_for
from agentledger.packs.hosted import Journal, sandbox_approver

__all__ = ["BANKING_PACK", "PACK_TARGETS", "SLACK_PACK", "approver_for", "work_order"]

# The directory entries runs act as (as in packs.tau2: work orders narrow them to a sandbox).
USER = Principal(
    user_id="emma-johnson",
    tenant_id=SANDBOX_PREFIX,
    scopes=frozenset(f"{n}:{s}" for n in ("banking", "slack") for s in ("read", "write")),
    display_name="Emma Johnson (AgentDojo's user)",
)
APPROVER = Principal(
    user_id="agentdojo-approver",
    tenant_id=SANDBOX_PREFIX,
    roles=frozenset({APPROVER_ROLE}),
    display_name="AgentDojo scripted approver (approves everything it is asked)",
)

PACK_TARGETS = {
    "agentdojo-banking": "agentledger.packs.agentdojo:BANKING_PACK",
    "agentdojo-slack": "agentledger.packs.agentdojo:SLACK_PACK",
}


def work_order(pair: Pair, nonce: str) -> WorkOrder:
    name = pair.suite
    task = suite(name, pair.version).user_tasks[pair.user_task]
    calls = len(planned_calls(pair))
    return WorkOrder(
        objective=f"AgentDojo {name} {pair.user_task}",
        request_text=str(task.PROMPT),
        principal=USER.model_copy(
            update={
                "tenant_id": sandbox_of(pair, nonce),
                "scopes": frozenset({f"{name}:read", f"{name}:write"}),
            }
        ),
        pack=f"agentdojo-{name}",
        agent_profile_id=f"agentdojo-{name}",
        references=pair.references(),
        budget=Budget(steps=calls + 6, tool_calls=calls + 2, tokens=5_000_000),
        grants=grants_for(pair),
    )


def approver_for(order: WorkOrder) -> Principal:
    return sandbox_approver(APPROVER, order)


def _from_request(name: SuiteName, request: str, principal: Principal) -> WorkOrder:
    """``"<user_task> <injection_task> [<attack> [<version>]]"``, e.g. from ``agentledger run
    agentdojo-banking``."""
    user_task, injection_task, *rest = request.split()
    attack, version = [*rest, ATTACK, BENCHMARK_VERSION][:2]
    return work_order(Pair(name, user_task, injection_task, attack, version), principal.user_id)


def _pack(name: SuiteName) -> Pack:
    tools = tools_for(name)
    return Pack(
        name=f"agentdojo-{name}",
        profile=profile_for(name, {n: t.contract for n, t in tools.items()}),
        tools=tools,
        principals=(USER, APPROVER),
        models={"agentdojo-compromised": CompromisedModel()},
        install=Journal.install,
        seed=lambda engine: False,
        make_work_order=lambda request, principal: _from_request(name, request, principal),
        policy_version=lambda engine: f"agentdojo-{BENCHMARK_VERSION}-{name}",
    )


BANKING_PACK = _pack("banking")
SLACK_PACK = _pack("slack")
