"""The support pack over A2A, through the A2A project's own client (``a2a-sdk``) against the real
stack: the card, a task that waits on an approval (``auth-required``) and completes once an
approver decides through the API, cancelling, and what another tenant or no token gets."""

from __future__ import annotations

import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import A2AError
from fastapi import FastAPI
from google.protobuf.json_format import ParseDict

from agentledger.api import create_app
from agentledger.domain.events import ApprovalGranted
from tests._temporal import Harness
from tests.api.conftest import Http, Signer, issuers, stack_issuer
from tests.api.test_runs_api import REQUEST

BASE = "http://api.test"
CARD = "/a2a/support/.well-known/agent-card.json"


@pytest.fixture
def app(harness: Harness, local_signer: Signer, external_signer: Signer) -> FastAPI:
    return create_app(
        harness.runtime.ledger,
        harness.client,
        harness.settings.task_queue,
        [*issuers(local_signer, external_signer), stack_issuer(harness)],
        signer=harness.issuer,
        public_url=BASE,
    )


async def agent(http: Http, subject: str) -> object:
    card = await fetched_card(http)
    config = ClientConfig(httpx_client=http(subject), streaming=False)
    return ClientFactory(config).create(card)


async def fetched_card(http: Http) -> pb.AgentCard:
    response = await http("").get(CARD)
    assert response.status_code == 200, response.text
    card = pb.AgentCard()
    ParseDict(response.json(), card, ignore_unknown_fields=True)
    return card


def message(text: str, task_id: str = "") -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            message_id=f"m-{abs(hash((text, task_id)))}",
            role=pb.ROLE_USER,
            task_id=task_id,
            parts=[pb.Part(text=text)],
        )
    )


async def sent(client: object, request: pb.SendMessageRequest) -> pb.Task:
    async for response in client.send_message(request):  # type: ignore[attr-defined]
        assert response.HasField("task"), response
        return response.task
    raise AssertionError("no response")


async def test_the_card_names_the_packs_steps_and_the_bearer_scheme(http: Http) -> None:
    card = await fetched_card(http)
    assert card.name == "support"
    assert card.supported_interfaces[0].url == f"{BASE}/a2a/support"
    assert card.supported_interfaces[0].protocol_binding == "JSONRPC"
    assert {s.id.split(".", 1)[1] for s in card.skills} >= {"draft_answer"}
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"


async def test_a_task_waits_on_its_approver_then_completes(http: Http, harness: Harness) -> None:
    customer = await agent(http, "usr_73")
    task = await sent(customer, message(REQUEST))
    assert task.status.state == pb.TASK_STATE_AUTH_REQUIRED, task
    assert "create_refund" in task.status.message.parts[0].text
    run_id = task.id

    inbox = (await http("ops_lead_1").get("/api/approvals")).json()["approvals"]
    (approval,) = [a for a in inbox if a["run_id"] == run_id]
    decided = await http("ops_lead_1").post(
        f"/api/runs/{run_id}/approvals/{approval['approval_id']}/decision", json={"approve": True}
    )
    assert decided.status_code == 200, decided.text
    events = await harness.finish(run_id)
    assert any(isinstance(e, ApprovalGranted) for e in events)

    done = await customer.get_task(pb.GetTaskRequest(id=run_id))  # type: ignore[attr-defined]
    assert done.status.state == pb.TASK_STATE_COMPLETED
    (answer,) = done.artifacts
    assert "ord_4821" in answer.parts[0].text

    with pytest.raises((A2AError, A2AClientError)):  # an ended task takes no message
        await sent(customer, message("and another?", task_id=run_id))


async def test_a_task_is_cancelled_and_refunds_nothing(http: Http, harness: Harness) -> None:
    customer = await agent(http, "usr_73")
    task = await sent(customer, message(REQUEST))
    assert task.status.state == pb.TASK_STATE_AUTH_REQUIRED
    cancelled = await customer.cancel_task(pb.CancelTaskRequest(id=task.id))  # type: ignore[attr-defined]
    assert cancelled.status.state == pb.TASK_STATE_CANCELED, cancelled
    kinds = [e.kind for e in harness.runtime.ledger.read(task.id)]
    assert "approval_expired" in kinds and "tool_call_succeeded" not in kinds


async def test_another_tenant_and_no_token_are_refused(http: Http) -> None:
    customer = await agent(http, "usr_73")
    task = await sent(customer, message("Where is my order ord_4821?"))
    stranger = await agent(http, "ops_globex")
    with pytest.raises((A2AError, A2AClientError)):
        await stranger.get_task(pb.GetTaskRequest(id=task.id))  # type: ignore[attr-defined]
    anonymous = await http("").post(
        "/a2a/support", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}
    )
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")


async def test_a_streamed_message_shows_the_task_until_it_waits_on_its_approver(
    http: Http,
) -> None:
    card = await fetched_card(http)
    client = ClientFactory(ClientConfig(httpx_client=http("usr_73"), streaming=True)).create(card)
    states = []
    async for response in client.send_message(message(REQUEST)):
        if response.HasField("task"):
            states.append(response.task.status.state)
        elif response.HasField("status_update"):
            states.append(response.status_update.status.state)
    assert states[-1] == pb.TASK_STATE_AUTH_REQUIRED, states
    assert len(states) == len(set(states))  # each change once
