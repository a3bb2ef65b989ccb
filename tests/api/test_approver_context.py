"""What an approver reads before deciding: the conversation behind the proposal (the customer's
turns and the question the agent asked) and what the call changes, before and after; and the
timeline's conversation rows, which say who wrote what and why."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from agentledger.api import views
from agentledger.app.render import timeline as cli_timeline
from agentledger.domain import events as ev
from tests._temporal import Harness
from tests.api.conftest import Http, Signer
from tests.api.test_runs_api import pending_refund

AT = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
ENVELOPE: dict[str, Any] = {"run_id": "run_1", "recorded_at": AT, "manifest_hash": "sha256:m"}


def conversation_events() -> list[ev.RunEvent]:
    return [
        ev.ReplyAwaited(
            **ENVELOPE,
            seq=1,
            reason="question",
            step="classify",
            message="Which subscription do you mean?",
            deadline=AT,
        ),
        ev.ReplyRefused(
            **ENVELOPE,
            seq=2,
            attempted_by="cust_eve",
            reason_code="not_requester",
            detail="only cust_ana may reply to this run",
        ),
        ev.UserReplied(
            **ENVELOPE,
            seq=3,
            text="The family plan, please.",
            principal_id="cust_ana",
            reply_id="r1",
        ),
        ev.ConversationClosed(
            **ENVELOPE, seq=4, reason="idle_timeout", message="We have closed this conversation."
        ),
    ]


def test_timeline_rows_of_a_conversation_carry_their_text_sender_and_reason() -> None:
    rows = {row["seq"]: row for row in views.timeline(conversation_events())}
    assert (rows[1]["sender"], rows[1]["text"], rows[1]["reason"]) == (
        "agent",
        "Which subscription do you mean?",
        "question",
    )
    assert (rows[2]["sender"], rows[2]["reason"]) == ("cust_eve", "not_requester")
    assert rows[2]["text"] == "only cust_ana may reply to this run"
    assert (rows[3]["sender"], rows[3]["text"]) == ("cust_ana", "The family plan, please.")
    assert (rows[4]["sender"], rows[4]["reason"]) == ("agent", "idle_timeout")
    assert rows[4]["text"] == "We have closed this conversation."
    for row in rows.values():
        assert row["text"] in row["summary"] and row["sender"] in row["summary"]
        assert row["reason"] is None or row["reason"] in row["summary"]


def test_the_cli_timeline_says_who_asked_replied_was_refused_and_closed() -> None:
    lines = cli_timeline(conversation_events())
    assert 'agent asked (question): "Which subscription do you mean?"' in lines[0]
    assert "reply by cust_eve refused, not_requester: only cust_ana may reply" in lines[1]
    assert 'cust_ana replied: "The family plan, please."' in lines[2]
    assert 'closed (idle_timeout): "We have closed this conversation."' in lines[3]


async def pending_cancellation(http: Http, harness: Harness) -> tuple[str, dict[str, Any]]:
    """cust_ana asks to cancel without saying which subscription; the run asks, she answers,
    and the cancellation waits for a billing lead."""
    customer = http("cust_ana")
    started = await customer.post(
        "/api/runs", json={"pack": "billing", "request": "Please cancel my subscription."}
    )
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    state = await harness.until_approval_or_end(run_id)
    assert state.awaiting is not None and state.awaiting.reason == "question"
    replied = await customer.post(
        f"/api/runs/{run_id}/replies", json={"text": "The family plan, please."}
    )
    assert replied.status_code == 200, replied.text
    for _ in range(400):
        inbox = (await http("billing_lead_1").get("/api/approvals")).json()["approvals"]
        mine = [a for a in inbox if a["run_id"] == run_id]
        if mine:
            return run_id, mine[0]
        await asyncio.sleep(0.05)
    raise AssertionError("the approval never reached the inbox")


@pytest.mark.temporal
async def test_the_approver_reads_the_conversation_and_what_the_call_changes(
    http: Http, harness: Harness, local_signer: Signer
) -> None:
    run_id, approval = await pending_cancellation(http, harness)

    turns = [(t["sender"], t["kind"], t["text"]) for t in approval["conversation"]]
    assert turns[0] == ("cust_ana", "request", "Please cancel my subscription.")
    assert turns[1][:2] == ("agent", "question") and "Family plan (sub_1002)" in turns[1][2]
    assert turns[2] == ("cust_ana", "reply", "The family plan, please.")

    change = approval["change"]
    assert (change["resource_argument"], change["resource_id"]) == ("subscription_id", "sub_1002")
    before = {row["name"]: row["before"] for row in change["rows"]}
    assert before["status"] == "active"
    assert all(row["after"] is None for row in change["rows"])  # nothing recorded yet
    assert change["recorded"] is False and change["bounds"] == []  # a cancellation has none

    browser = http("")
    await browser.post("/login", data={"token": local_signer.token("billing_lead_1")})
    page = (await browser.get("/ui/approvals")).text
    card = page[page.index(f'id="h-{run_id}-') :]
    assert "The family plan, please." in card and "Family plan (sub_1002)" in card
    assert "What the call changes" in card and "active" in card

    url = f"/api/runs/{run_id}/approvals/{approval['approval_id']}/decision"
    granted = await http("billing_lead_1").post(url, json={"approve": True, "reason": "asked"})
    assert granted.status_code == 200, granted.text
    after = await recorded_change(http("billing_lead_1"), run_id)
    rows = {row["name"]: (row["before"], row["after"]) for row in after["rows"]}
    assert rows["status"] == ("active", "cancelled")
    assert after["outcome"] == "succeeded" and "sub_1002" in after["receipt_view"]
    await harness.client.get_workflow_handle(run_id).terminate("test done")


async def recorded_change(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    """The run's approvals once the call's receipt reached the ledger."""
    for _ in range(400):
        shown = (await client.get(f"/api/runs/{run_id}/approvals")).json()["approvals"]
        if shown and shown[0]["change"]["recorded"]:
            return dict(shown[0]["change"])
        await asyncio.sleep(0.05)
    raise AssertionError("the cancellation's receipt never reached the ledger")


@pytest.mark.temporal
async def test_a_refund_shows_the_limit_the_gate_holds_its_amount_to(
    http: Http, harness: Harness
) -> None:
    """Arguments are never taken for what the call will do: the refund's ``amount`` is shown
    beside the facts it is bounded by, and the order's ``amount`` fact has no "after"."""
    run_id, approval_id = await pending_refund(http, harness)
    (approval,) = [
        a
        for a in (await http("ops_lead_1").get("/api/approvals")).json()["approvals"]
        if a["approval_id"] == approval_id and a["run_id"] == run_id
    ]
    change = approval["change"]
    assert (change["resource_argument"], change["resource_id"]) == ("order_id", "ord_4821")
    rows = {row["name"]: (row["before"], row["after"]) for row in change["rows"]}
    assert rows["amount"] == (42.5, None) and rows["order_status"] == ("delivered_late", None)
    assert {"argument": "amount", "value": 42.5, "relation": "at_most"}.items() <= (
        change["bounds"][0].items()
    )
    assert change["bounds"][0]["fact_value"] == 42.5
