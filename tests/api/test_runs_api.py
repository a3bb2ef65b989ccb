"""The refund scenario through the API: who may see and decide what, typed refusals, nothing
applied twice, and the run's packets, receipts and manifest as the ledger holds them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import func, select

from agentledger.activities.memory import MemoryStore
from agentledger.api.audit import api_denials
from agentledger.domain.claims import CONFIRMED_HEADING
from agentledger.domain.context import ContextPacket, render_packet
from agentledger.domain.context.clearance import as_cleared
from agentledger.domain.events import (
    ApprovalAttemptRefused,
    ApprovalGranted,
    ApprovalRejected,
    RunCompleted,
)
from agentledger.domain.memory.records import MemoryProposal, MemoryScope
from agentledger.domain.principal import Principal
from agentledger.packs.support import records
from tests._temporal import Harness
from tests.api.conftest import LOCAL, Http, Signer
from tests.api.test_authentication import problem_type

REQUEST = "Can I get a refund for order ord_4821? It arrived late."


async def pending_refund(http: Http, harness: Harness) -> tuple[str, str]:
    """Start the refund as its customer, through the API; wait until the ledger shows the
    pending approval (the inbox reads the read model)."""
    started = await http("usr_73").post("/api/runs", json={"pack": "support", "request": REQUEST})
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    await harness.until_approval_or_end(run_id)
    for _ in range(200):
        inbox = (await http("ops_lead_1").get("/api/approvals")).json()["approvals"]
        mine = [a for a in inbox if a["run_id"] == run_id]
        if mine:
            return run_id, mine[0]["approval_id"]
        await asyncio.sleep(0.05)
    raise AssertionError("the approval never reached the inbox")


def refunds(harness: Harness) -> int:
    with harness.runtime.ledger.engine.connect() as conn:
        query = select(func.count()).select_from(records.refunds)
        return int(conn.execute(query.where(records.refunds.c.order_id == "ord_4821")).scalar_one())


def denials(harness: Harness) -> list[tuple[str, str, str]]:
    query = select(api_denials.c.subject, api_denials.c.action, api_denials.c.reason_code)
    with harness.runtime.ledger.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(query)]  # type: ignore[misc]


async def test_only_an_approver_of_the_tenant_decides_and_only_once(
    http: Http, harness: Harness
) -> None:
    run_id, approval_id = await pending_refund(http, harness)
    url = f"/api/runs/{run_id}/approvals/{approval_id}/decision"

    own = await http("usr_73").post(url, json={"approve": True})
    assert own.status_code == 403 and problem_type(own) == "requester-cannot-approve"
    agent = await http("agent_2").post(url, json={"approve": True})
    assert agent.status_code == 403 and problem_type(agent) == "missing-role"
    other_tenant = await http("ops_globex").post(url, json={"approve": True})
    assert other_tenant.status_code == 404 and problem_type(other_tenant) == "not-found"
    assert ("ops_globex", "decide", "wrong_tenant") in denials(harness)

    granted = await http("ops_lead_1").post(url, json={"approve": True, "reason": "late"})
    assert granted.status_code == 200, granted.text
    again = await http("ops_lead_1").post(url, json={"approve": True})
    assert again.status_code == 409 and problem_type(again) == "not-pending"

    events = await harness.finish(run_id)
    assert refunds(harness) == 1
    (grant,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert grant.approver == "ops_lead_1" and grant.assertion is not None
    assert grant.assertion.subject == "ops_lead_1"
    assert grant.assertion.issuer == harness.issuer.name  # the service signed ...
    assert grant.assertion.on_behalf_of_issuer == LOCAL  # ... for the verified caller's token
    assert grant.assertion.on_behalf_of_token_id
    refused = [
        e for e in harness.runtime.ledger.read(run_id) if isinstance(e, ApprovalAttemptRefused)
    ]
    assert [(e.attempted_by, e.reason_code) for e in refused] == [
        ("usr_73", "requester_cannot_approve"),
        ("agent_2", "missing_role"),
        ("ops_lead_1", "not_pending"),
    ]
    shown = (await http("ops_lead_1").get(f"/api/runs/{run_id}/approvals")).json()
    assert [a["status"] for a in shown["approvals"]] == ["granted"]
    (decided,) = shown["decisions"]
    assert decided["assertion"]["subject"] == "ops_lead_1"
    assert decided["assertion"]["on_behalf_of_token_id"] == grant.assertion.on_behalf_of_token_id
    assert len(shown["refused_attempts"]) == 3


async def test_an_approver_approves_a_smaller_refund_and_the_run_shows_the_signed_edit(
    http: Http, harness: Harness
) -> None:
    run_id, approval_id = await pending_refund(http, harness)
    url = f"/api/runs/{run_id}/approvals/{approval_id}/decision"
    ops = http("ops_lead_1")
    wider = await ops.post(url, json={"approve": True, "edits": {"amount": 4250.0}})
    assert wider.status_code == 403 and problem_type(wider) == "edit-widens", wider.text
    typed = await ops.post(url, json={"approve": True, "edits": {"amount": "20"}})
    assert typed.status_code == 422 and problem_type(typed) == "invalid-edit", typed.text
    empty = await ops.post(url, json={"approve": True, "edits": {}})
    assert empty.status_code == 422, empty.text  # refused by the body's schema
    granted = await ops.post(url, json={"approve": True, "edits": {"amount": 20.0}})
    assert granted.status_code == 200 and granted.json()["decision"] == "granted", granted.text
    await harness.finish(run_id)

    shown = (await ops.get(f"/api/runs/{run_id}/approvals")).json()
    (decided,) = shown["decisions"]
    assert decided["assertion"]["subject"] == "ops_lead_1"
    assert decided["edit"]["approved"]["amount"] == 20.0
    assert [c["argument"] for c in decided["edit"]["changes"]] == ["amount"]
    assert [a["reason_code"] for a in shown["refused_attempts"]] == ["edit_widens", "invalid_edit"]
    assert refunds(harness) == 1


async def test_a_batch_decides_each_approval_on_its_own_and_reports_each(
    http: Http, harness: Harness
) -> None:
    (first, apr1), (second, apr2) = [await pending_refund(http, harness) for _ in range(2)]
    decisions = [
        {"run_id": first, "approval_id": apr1, "approve": False, "reason": "duplicate"},
        {"run_id": second, "approval_id": apr2, "approve": False, "reason": "duplicate"},
        {"run_id": second, "approval_id": apr2, "approve": False},  # the same one again
        {"run_id": second, "approval_id": "apr_999", "approve": False},
    ]
    answer = await http("ops_lead_1").post(
        "/api/approvals/decisions", json={"decisions": decisions}
    )
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [(r["run_id"], r["approval_id"]) for r in results] == [
        (d["run_id"], d["approval_id"]) for d in decisions
    ]  # in the order given
    assert results[0]["ok"] and results[0]["decision"] == "rejected"
    same = results[1:3]  # the same approval twice: exactly one decides it
    assert sorted(r["ok"] for r in same) == [False, True]
    (lost,) = [r for r in same if not r["ok"]]
    assert lost["reason_code"] in ("not_pending", "run_ended"), lost
    assert not results[3]["ok"] and results[3]["status"] == 404
    for run_id in (first, second):
        events = await harness.finish(run_id)
        assert len([e for e in events if isinstance(e, ApprovalRejected)]) == 1
    too_many = {"decisions": decisions * 13}
    refused = await http("ops_lead_1").post("/api/approvals/decisions", json=too_many)
    assert refused.status_code == 422, refused.text


async def test_a_run_shows_its_packets_receipts_and_manifest_to_its_tenant_only(
    http: Http, harness: Harness
) -> None:
    run_id, approval_id = await pending_refund(http, harness)
    ops = http("ops_lead_1")
    await ops.post(f"/api/runs/{run_id}/approvals/{approval_id}/decision", json={"approve": True})
    await harness.finish(run_id)

    packets = (await ops.get(f"/api/runs/{run_id}/packets")).json()["packets"]
    assert packets and all(p["cache_key"].startswith("sha256:") for p in packets)
    shown = [
        (await ops.get(f"/api/runs/{run_id}/packets/{p['packet_hash']}")).json() for p in packets
    ]
    for packet in shown:
        assert sum(s["tokens"] for s in packet["sections"]) <= packet["total_tokens"]
        assert all(s["text"] for s in packet["sections"] if s["items"])
        # Exactly as sent: the working-state block the model reads is in the text shown.
        stored = ContextPacket.model_validate(
            harness.runtime.ledger.get_packet(packet["packet_hash"])
        )
        readable = tuple(as_cleared(s, packet["clearance"]) for s in stored.sections)
        assert packet["text"] == render_packet(stored.model_copy(update={"sections": readable}))
        assert '<data id="working_state"' in packet["text"]
    omissions = [o for p in shown for o in p["omissions"]]
    assert omissions and all(o["reason"] for o in omissions)
    diff = (
        await ops.get(
            f"/api/runs/{run_id}/packets/{packets[0]['packet_hash']}/diff/{packets[-1]['packet_hash']}"
        )
    ).json()
    assert diff["total_tokens"] == [packets[0]["total_tokens"], packets[-1]["total_tokens"]]
    assert (
        "working_state"
        in next(s for s in diff["sections"] if s["name"] == "working_state")["changed"]
    )

    receipts = (await ops.get(f"/api/runs/{run_id}/receipts")).json()["receipts"]
    refund = [r for r in receipts if r["tool"] == "create_refund"]
    assert len(refund) == 1 and refund[0]["status"] == "succeeded"
    assert refund[0]["user_view"] and isinstance(refund[0]["model_view"], dict)
    manifest = (await ops.get(f"/api/runs/{run_id}/manifest")).json()
    assert manifest["manifest"] is not None

    for outsider in ("ops_globex", "usr_88"):
        for path in ("", "/timeline", "/packets", "/receipts", "/manifest"):
            response = await http(outsider).get(f"/api/runs/{run_id}{path}")
            assert response.status_code == 404, (outsider, path)
    assert (await http("usr_73").get(f"/api/runs/{run_id}/timeline")).status_code == 200


async def test_runs_are_listed_by_filter_a_page_at_a_time(http: Http, harness: Harness) -> None:
    waiting, _ = await pending_refund(http, harness)
    other = await http("usr_88").post("/api/runs", json={"request": "Where is my order ord_5101?"})
    await harness.until_approval_or_end(other.json()["run_id"])
    ops = http("ops_lead_1")

    pending = (await ops.get("/api/runs", params={"waiting_on_approval": "true"})).json()
    assert [r["run_id"] for r in pending["runs"]] == [waiting]
    first = (await ops.get("/api/runs", params={"limit": 1})).json()
    assert len(first["runs"]) == 1 and first["next_cursor"]
    second = (
        await ops.get("/api/runs", params={"limit": 1, "cursor": first["next_cursor"]})
    ).json()
    assert {first["runs"][0]["run_id"], second["runs"][0]["run_id"]} == {
        waiting,
        other.json()["run_id"],
    }
    for words, found in (("ORD_5101", [other.json()["run_id"]]), ("late 4821", [waiting])):
        searched = (await ops.get("/api/runs", params={"q": words})).json()["runs"]
        assert [r["run_id"] for r in searched] == found, words  # every word, any case
    assert (await ops.get("/api/runs", params={"q": "100%_"})).json()["runs"] == []
    mine = (await http("usr_88").get("/api/runs")).json()["runs"]
    assert {r["principal_id"] for r in mine} == {"usr_88"}
    assert (await http("ops_globex").get("/api/runs")).json()["runs"] == []
    assert (await http("ops_globex").get("/api/approvals")).json()["approvals"] == []


async def test_a_reply_goes_to_the_run_which_refuses_it_in_its_own_words(
    http: Http, harness: Harness
) -> None:
    started = await http("usr_73").post(
        "/api/runs", json={"request": "Where is my order ord_4821?"}
    )
    run_id = started.json()["run_id"]
    await harness.until_approval_or_end(run_id)
    response = await http("usr_73").post(f"/api/runs/{run_id}/replies", json={"text": "hello?"})
    assert response.status_code == 409 and problem_type(response) == "reply-refused"
    assert "does not take replies" in response.json()["detail"]
    assert (
        await http("usr_88").post(f"/api/runs/{run_id}/replies", json={"text": "hi"})
    ).status_code == 404
    kinds = [e.kind for e in harness.runtime.ledger.read(run_id)]
    assert kinds.count("reply_refused") == 1


async def test_a_reply_to_an_ended_run_says_it_ended(http: Http, harness: Harness) -> None:
    # ord_4822 arrived on time: the run answers and ends (ord_4821's late delivery would wait
    # for a refund approval).
    started = await http("usr_73").post(
        "/api/runs", json={"request": "Where is my order ord_4822?"}
    )
    run_id = started.json()["run_id"]
    await harness.finish(run_id)
    response = await http("usr_73").post(f"/api/runs/{run_id}/replies", json={"text": "hello?"})
    assert response.status_code == 409 and problem_type(response) == "run-ended", response.text
    detail = response.json()["detail"]
    assert f"run {run_id} has ended (completed)" in detail and "no run" not in detail


async def test_a_runs_stream_says_when_it_moved_and_ends_with_the_run(
    http: Http, harness: Harness
) -> None:
    run_id, approval_id = await pending_refund(http, harness)
    ops = http("ops_lead_1")
    await ops.post(f"/api/runs/{run_id}/approvals/{approval_id}/decision", json={"approve": False})
    await harness.finish(run_id)
    response = await ops.get(f"/api/runs/{run_id}/stream")
    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = response.text.split("\n\n")
    (moved,) = [block for block in blocks if block.startswith("event: moved")]
    last = harness.runtime.ledger.last_seq(run_id)
    assert f'"last_seq": {last}' in moved and '"status": "completed"' in moved
    answer = harness.runtime.ledger.get_run(run_id).answer  # type: ignore[union-attr]
    assert answer and json.loads(moved.split("data: ")[1])["answer"] == answer
    # The newest answer as it was written (the playbook does not stream: one token, whole),
    # with the id a reconnecting client sends back; resumed there, nothing of it comes again.
    (token,) = [block for block in blocks if "event: token" in block]
    event_id = token.split("\n")[0].removeprefix("id: ")
    assert json.loads(token.split("data: ")[1])["text"] == answer
    newest = harness.runtime.ledger.read_stream(run_id).stream
    assert newest is not None and event_id == f"{newest.number}:{len(answer)}"
    resumed = await ops.get(f"/api/runs/{run_id}/stream", headers={"Last-Event-ID": event_id})
    assert "event: token" not in resumed.text and "event: moved" in resumed.text
    assert (await http("ops_globex").get(f"/api/runs/{run_id}/stream")).status_code == 404


async def test_the_runs_pages_show_a_tenant_its_own_runs_only(
    http: Http, harness: Harness, local_signer: Signer
) -> None:
    run_id, _ = await pending_refund(http, harness)

    async def page(subject: str, path: str) -> httpx.Response:
        browser = http("")
        await browser.post("/login", data={"token": local_signer.token(subject)})
        return await browser.get(path)

    listed = await page("ops_lead_1", "/ui/runs?status=awaiting_approval")
    assert listed.status_code == 200 and run_id in listed.text
    assert run_id not in (await page("ops_globex", "/ui/runs")).text
    hidden = await page("ops_globex", f"/ui/runs/{run_id}")
    assert hidden.status_code == 404 and "text/html" in hidden.headers["content-type"]
    shown = await page("usr_73", f"/ui/runs/{run_id}")
    assert shown.status_code == 200 and "awaiting_approval" in shown.text


async def test_the_run_page_shows_the_answer_as_the_customer_received_it(
    http: Http, harness: Harness, local_signer: Signer
) -> None:
    """The confirmation lines the runtime rendered from the receipts are part of the answer."""
    run_id, approval_id = await pending_refund(http, harness)
    decided = await http("ops_lead_1").post(
        f"/api/runs/{run_id}/approvals/{approval_id}/decision", json={"approve": True}
    )
    assert decided.status_code == 200, decided.text
    events = await harness.finish(run_id)
    (done,) = [e for e in events if isinstance(e, RunCompleted)]
    assert CONFIRMED_HEADING in done.answer
    browser = http("")
    await browser.post("/login", data={"token": local_signer.token("usr_73")})
    shown = await browser.get(f"/ui/runs/{run_id}")
    assert shown.status_code == 200 and CONFIRMED_HEADING in shown.text, shown.text


async def test_packet_items_above_the_readers_clearance_are_shown_without_their_content(
    http: Http, harness: Harness
) -> None:
    """A restricted preference enters the packet inside the customer's profile summary, which
    is then as sensitive as it (the model needs it); the customer and staff see that the item
    is there, by id and hash, and only an auditor reads it."""
    customer = harness.principal("usr_73")
    store = MemoryStore.of(harness.runtime.ledger)
    note = MemoryProposal(
        memory_id="pref_acme_usr_73_contact",
        category="user_preference",
        content={"contact": "private-line-5550143"},
        scope=MemoryScope(tenant_id=customer.tenant_id, user_id=customer.user_id),
        writer="principal",
        source=f"principal:{customer.user_id}",
        trust="user_claim",
        sensitivity="restricted",
    )
    assert store.propose(note, customer, datetime.now(UTC)).published
    auditor = Principal(
        user_id="audit_1", tenant_id=customer.tenant_id, roles=frozenset({"auditor"})
    )
    harness.runtime.ledger.put_principal(auditor)
    run_id, _ = await pending_refund(http, harness)
    packets = (await http("usr_73").get(f"/api/runs/{run_id}/packets")).json()["packets"]
    urls = [f"/api/runs/{run_id}/packets/{p['packet_hash']}" for p in packets]
    full = [(await http("audit_1").get(url)).json() for url in urls]
    url = next(
        u for u, p in zip(urls, full, strict=True) if "private-line-5550143" in json.dumps(p)
    )

    seen = {who: (await http(who).get(url)).json() for who in ("usr_73", "ops_lead_1", "audit_1")}

    def the_note(packet: dict[str, Any]) -> dict[str, Any]:
        (item,) = [
            i for s in packet["sections"] for i in s["items"] if i["id"].startswith("profile:")
        ]
        return item

    for who, clearance in (("usr_73", "internal"), ("ops_lead_1", "confidential")):
        assert seen[who]["clearance"] == clearance and seen[who]["redacted"] == 1
        assert the_note(seen[who])["content"] == {"redacted": "restricted"}
        assert "private-line-5550143" not in json.dumps(seen[who])
    assert seen["audit_1"]["redacted"] == 0
    assert the_note(seen["audit_1"])["content"] == {
        "contact": "private-line-5550143",
        "language": "en",
    }
    assert "private-line-5550143" in json.dumps(seen["audit_1"]["sections"])
    hashes = {the_note(p)["content_hash"] for p in seen.values()} | {
        p["packet_hash"] for p in seen.values()
    }
    assert len(hashes) == 2  # one item hash and one packet hash, whoever reads them
    page = await http("ops_lead_1").get(url.replace("/api/", "/ui/"))
    assert "private-line-5550143" not in page.text and "above your clearance" in page.text
