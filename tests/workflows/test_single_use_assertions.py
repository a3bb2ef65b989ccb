"""A signed reply is taken once, for the question it answers: the copy an attacker reads from the
run's Temporal history and sends again (through the raw SDK or the bare `temporal` binary) is
refused as ``assertion_replayed`` and recorded, even after the run continued as new; a reply
signed for an earlier question answers nothing else."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowUpdateFailedError

from agentledger.app import runs as client_ops
from agentledger.app.devserver import temporal_binary
from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.workflows import AgentRunWorkflow, Reply
from bench._chat_pack import CUSTOMER
from tests._temporal import Harness

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]


async def _chatting(harness: Harness, pack: str = "chat") -> tuple[str, str]:
    """A run that asked its question, was answered "red" (signed), and now waits for a
    follow-up: its id and the id of its first execution."""
    order = get_pack(pack).make_work_order("I'd like to pick a colour", CUSTOMER)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    await client_ops.wait_for(harness.client, handle.id, pending_approval=False)
    await client_ops.reply(
        harness.client, handle.id, CUSTOMER.user_id, "red", issuer=harness.issuer
    )
    state = await client_ops.wait_for(harness.client, handle.id, pending_approval=False)
    assert state.awaiting is not None and state.awaiting.reason == "follow_up"
    assert handle.first_execution_run_id is not None
    return handle.id, handle.first_execution_run_id


async def _replies_in_history(client: Client, run_id: str, first: str) -> list[dict[str, Any]]:
    """Every reply update the server accepted, as an attacker reads it from the run's
    executions (following continue-as-new): the signed assertions included."""
    found: list[dict[str, Any]] = []
    execution: str | None = first
    while execution:
        history = await client.get_workflow_handle(run_id, run_id=execution).fetch_history()
        execution = None
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                request = event.workflow_execution_update_accepted_event_attributes
                if request.accepted_request.input.name == "reply":
                    sealed = request.accepted_request.input.args.payloads[0]
                    # An insider's read: the payload codec's keys open the sealed payload.
                    codec = client.data_converter.payload_codec
                    (payload,) = await codec.decode([sealed]) if codec else (sealed,)
                    found.append(json.loads(payload.data))
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                attributes = event.workflow_execution_continued_as_new_event_attributes
                execution = attributes.new_execution_run_id
    return found


def _recorded(harness: Harness, run_id: str) -> tuple[list[str], list[str]]:
    events = harness.runtime.ledger.read(run_id)
    taken = [e.text for e in events if isinstance(e, ev.UserReplied)]
    refused = [e.reason_code for e in events if isinstance(e, ev.ReplyRefused)]
    return taken, refused


async def _ledger_holds(
    harness: Harness, run_id: str, refusals: int, replies: int = 1
) -> tuple[list[str], list[str]]:
    """What the ledger recorded once it holds as many refusals and replies (a run flushes its
    last events as it parks, which may still be under way when the update returns)."""
    for _ in range(100):
        taken, refused = _recorded(harness, run_id)
        if len(refused) >= refusals and len(taken) >= replies:
            return taken, refused
        await asyncio.sleep(0.05)
    return _recorded(harness, run_id)


async def test_a_reply_copied_from_history_and_sent_again_through_the_sdk_is_refused(
    harness: Harness,
) -> None:
    run_id, first = await _chatting(harness)
    (copied,) = await _replies_in_history(harness.client, run_id, first)
    assert copied["assertion"]  # the signed reply is there for anyone who reads history

    with pytest.raises(WorkflowUpdateFailedError) as refusal:
        await harness.client.get_workflow_handle(run_id).execute_update(
            AgentRunWorkflow.reply, Reply.model_validate(copied)
        )
    assert getattr(refusal.value.cause, "type", None) == "assertion_replayed"
    assert await _ledger_holds(harness, run_id, 1) == (["red"], ["assertion_replayed"])


async def test_a_reply_copied_from_history_and_sent_by_the_bare_temporal_binary_is_refused(
    harness: Harness,
) -> None:
    run_id, first = await _chatting(harness)
    (copied,) = await _replies_in_history(harness.client, run_id, first)
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        "workflow",
        "update",
        "execute",
        "--address",
        harness.settings.temporal_address or "",
        "--workflow-id",
        run_id,
        "--name",
        "reply",
        "--input",
        json.dumps(copied),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode != 0, out
    assert b"already used" in out
    assert await _ledger_holds(harness, run_id, 1) == (["red"], ["assertion_replayed"])


async def test_a_reply_is_refused_again_after_the_run_continued_as_new(harness: Harness) -> None:
    run_id, first = await _chatting(harness, pack="chat_can")
    await client_ops.reply(harness.client, run_id, CUSTOMER.user_id, "blue", issuer=harness.issuer)
    state = await client_ops.wait_for(harness.client, run_id, pending_approval=False)
    assert state.awaiting is not None
    copied = await _replies_in_history(harness.client, run_id, first)
    assert [c["text"] for c in copied] == ["red", "blue"]
    described = await harness.client.get_workflow_handle(run_id).describe()
    assert described.run_id != first  # the replies are read from executions that ended

    for reply in copied:
        with pytest.raises(WorkflowUpdateFailedError) as refusal:
            await harness.client.get_workflow_handle(run_id).execute_update(
                AgentRunWorkflow.reply, Reply.model_validate(reply)
            )
        assert getattr(refusal.value.cause, "type", None) == "assertion_replayed"
    taken, refused = await _ledger_holds(harness, run_id, 2, replies=2)
    assert (taken, refused) == (["red", "blue"], ["assertion_replayed", "assertion_replayed"])


async def test_a_reply_signed_for_an_earlier_question_answers_nothing_else(
    harness: Harness,
) -> None:
    run_id, _ = await _chatting(harness)
    events = harness.runtime.ledger.read(run_id)
    asked = next(e.seq for e in events if isinstance(e, ev.ReplyAwaited))
    stale = Reply(
        principal_id=CUSTOMER.user_id,
        text="blue",
        assertion=harness.issuer.reply_assertion(
            CUSTOMER.user_id, run_id=run_id, text="blue", reply_to=asked
        ),
    )
    with pytest.raises(WorkflowUpdateFailedError) as refusal:
        await harness.client.get_workflow_handle(run_id).execute_update(
            AgentRunWorkflow.reply, stale
        )
    assert getattr(refusal.value.cause, "type", None) == "assertion_wrong_question"
    await client_ops.reply(harness.client, run_id, CUSTOMER.user_id, "blue", issuer=harness.issuer)
    taken, refused = await _ledger_holds(harness, run_id, 1, replies=2)
    assert (taken, refused) == (["red", "blue"], ["assertion_wrong_question"])
