"""The support pack with a model that takes 200 ms per call, as a real provider's network call
would: runs are I/O-bound, so more worker processes should finish more of them per second."""

from __future__ import annotations

import dataclasses
import time

from agentledger.activities.ports import ModelReply
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.support import PACK as SUPPORT
from agentledger.packs.support.playbook import Playbook

NAME = "support_slow"
MODEL_SECONDS = 0.2


class SlowPlaybook:
    """The support playbook, after waiting as long as a provider's round trip."""

    def __init__(self) -> None:
        self._inner = Playbook()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        time.sleep(MODEL_SECONDS)  # waits like I/O: the worker's other activities run meanwhile
        return self._inner.decide(packet, profile)


def make_work_order(request: str, principal: Principal) -> WorkOrder:
    return SUPPORT.make_work_order(request, principal).model_copy(update={"pack": NAME})


PACK = dataclasses.replace(
    SUPPORT,
    name=NAME,
    profile=SUPPORT.profile.model_copy(
        update={"model": SUPPORT.profile.model.model_copy(update={"provider": "slow_playbook"})}
    ),
    models={"slow_playbook": SlowPlaybook()},
    make_work_order=make_work_order,
)
