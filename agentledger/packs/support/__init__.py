"""The support pack: refunds and order questions for a small web shop (seed 000's example)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from agentledger.activities.ports import Sample
from agentledger.activities.retrieval import GLOBAL_TENANT, SqlRetriever
from agentledger.domain.planning import GrantPlanner, plan_grants
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support import records
from agentledger.packs.support.planner import ORDER_REF, RequestPlanner
from agentledger.packs.support.playbook import Playbook
from agentledger.packs.support.profile import SUPPORT_PROFILE
from agentledger.packs.support.seed import PRINCIPALS, seed
from agentledger.packs.support.tools import GetCustomer, GetOrder, SearchReturnsPolicy
from agentledger.packs.support.webhooks import HELPDESK
from agentledger.packs.support.write_tools import CreateRefund, SendCustomerMessage

__all__ = ["PACK", "make_work_order", "planned_work_order"]


def make_work_order(request: str, principal: Principal) -> WorkOrder:
    """Resolve the request's terms to canonical ids before the run starts (seed 003, step 2),
    then plan its grants from the request alone (``planner.RequestPlanner``)."""
    return planned_work_order(request, principal, RequestPlanner())


def planned_work_order(request: str, principal: Principal, planner: GrantPlanner) -> WorkOrder:
    """A work order whose grants ``planner`` proposed (any ``GrantPlanner``: a model's too)."""
    references = {}
    if (match := ORDER_REF.search(request)) is not None:
        references["order_id"] = match.group(0)
    order = WorkOrder(
        objective="resolve a refund request",
        request_text=request,
        principal=principal,
        pack="support",
        agent_profile_id=SUPPORT_PROFILE.profile_id,
        references=references,
    )
    return plan_grants(order, SUPPORT_PROFILE, planner)


def policy_version(engine: Engine) -> str:
    """The policy bundle pinned for an attempt: every shared document at the revision in force
    when the attempt starts (tenant-specific revisions are not part of the pin yet)."""
    current = SqlRetriever(engine).current_revisions(GLOBAL_TENANT, datetime.now(UTC))
    pinned = ",".join(f"{doc}@{rev}" for doc, rev in current.items()) or "none"
    return f"{SUPPORT_PROFILE.policy_bundle}:{pinned}"


PACK = Pack(
    name="support",
    profile=SUPPORT_PROFILE,
    tools={
        t.contract.name: t
        for t in (
            GetOrder(),
            GetCustomer(),
            SearchReturnsPolicy(),
            CreateRefund(),
            SendCustomerMessage(),
        )
    },
    principals=PRINCIPALS,
    models={"playbook": Playbook()},
    install=records.install,
    seed=seed,
    make_work_order=make_work_order,
    policy_version=policy_version,
    sample=Sample(
        request="Can I get a refund for order ord_4821? It arrived late.",
        user_id="usr_73",
        approver_id="ops_lead_1",
    ),
    webhooks={HELPDESK.source: HELPDESK},
)
