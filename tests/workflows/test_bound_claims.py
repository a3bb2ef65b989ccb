"""On the real server: an answer that claims a receipt about another resource is refused as
``unsupported_claim`` and recorded; the run then answers truthfully, and the customer receives
the receipt's own confirmation line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from agentledger.activities.ports import ModelReply
from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack, register_pack, unregister_pack
from agentledger.domain import events as ev
from agentledger.domain.claims import CONFIRMED_HEADING
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.support import PACK as SUPPORT
from agentledger.packs.support.playbook import Playbook
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, approve_pending

NAME = "support_boastful"
OTHER_ORDER = "ord_9999"


class BoastfulModel:
    """The playbook, except that once the refund succeeded it first claims it for another
    order, as a model mixing up two of a customer's orders would."""

    def __init__(self) -> None:
        self._playbook = Playbook()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        reply = self._playbook.decide(packet, profile)
        claims = reply.output.get("claims")
        if packet.step != "draft_answer" or not claims or _refused_once(packet):
            return reply
        misattributed = [{**c, "resource_id": OTHER_ORDER} for c in claims if isinstance(c, dict)]
        output = {**reply.output, "answer": f"Order {OTHER_ORDER} is refunded."}
        return replace(reply, output={**output, "claims": misattributed})


def _refused_once(packet: ContextPacket) -> bool:
    rejected = packet.working_state.get("rejected_options")
    return isinstance(rejected, list) and any(
        isinstance(r, dict) and r.get("reason_code") == "unsupported_claim" for r in rejected
    )


def _work_order(request: str, principal: Principal) -> WorkOrder:
    return SUPPORT.make_work_order(request, principal).model_copy(update={"pack": NAME})


BOASTFUL = replace(
    SUPPORT,
    name=NAME,
    make_work_order=_work_order,
    profile=SUPPORT.profile.model_copy(
        update={"model": SUPPORT.profile.model.model_copy(update={"provider": "boastful"})}
    ),
    models={"boastful": BoastfulModel()},
)


@pytest.fixture(autouse=True)
def _boastful_pack() -> Iterator[None]:
    register_pack(NAME, f"{__name__}:BOASTFUL")  # before the harness builds its worker
    yield
    unregister_pack(NAME)


@pytest.mark.temporal
async def test_a_claim_about_another_order_is_refused_recorded_and_never_delivered(
    harness: Harness,
) -> None:
    order = get_pack(NAME).make_work_order(REQUEST, harness.principal("usr_73"))
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    await approve_pending(harness, handle.id)
    events = await harness.finish(handle.id)

    refused = [e for e in events if isinstance(e, ev.DecisionRejected)]
    assert [(e.reason_code, e.option) for e in refused] == [("unsupported_claim", "answer")]
    assert OTHER_ORDER in refused[0].detail and "about ord_4821" in refused[0].detail
    done = events[-1]
    assert isinstance(done, ev.RunCompleted)
    assert OTHER_ORDER not in done.answer
    assert [(c.tool, c.resource_id) for c in done.claims] == [("create_refund", "ord_4821")]
    assert f"\n\n{CONFIRMED_HEADING}\n- " in done.answer
    authorised = [e for e in events if isinstance(e, ev.ToolCallAuthorised)]
    assert {e.tool: e.resource_id for e in authorised}["create_refund"] == "ord_4821"
