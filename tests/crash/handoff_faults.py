"""``support_reviewed_faulty``: the fraud-check handoff with a crash point in the child's read.

Only the reviewer (the child run) calls ``get_customer``; wrapping it with the fault pack's
``CrashingRead`` makes a worker loaded with ``FAULT_POINT=get_customer`` SIGKILL itself in the
middle of the child, once per test (the marker file stays in the test's directory).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs import Pack
from agentledger.packs.support.review import PACK as REVIEWED
from bench.crash.crashkit import CrashSite
from bench.crash.fault_pack import CrashingRead

__all__ = ["NAME", "PACK", "HandoffSite", "make_work_order"]

NAME = "support_reviewed_faulty"


def make_work_order(request: str, principal: Principal) -> WorkOrder:
    return REVIEWED.make_work_order(request, principal).model_copy(update={"pack": NAME})


PACK: Pack = replace(
    REVIEWED,
    name=NAME,
    tools={**REVIEWED.tools, "get_customer": CrashingRead(REVIEWED.tools["get_customer"])},
    make_work_order=make_work_order,
)


@dataclass(frozen=True)
class HandoffSite(CrashSite):
    """A crash site whose workers also load this pack."""

    def worker_env(
        self, point: str | None, barrier: int = 1, action: str = "kill"
    ) -> dict[str, str]:
        env = super().worker_env(point, barrier, action)
        env["AGENTLEDGER_PACKS"] += f",{NAME}={__name__}:PACK"
        return env
