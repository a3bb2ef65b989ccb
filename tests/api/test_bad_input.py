"""Malformed JSON, oversized bodies, unknown ids, missing roles and forged forms: typed
problems, recorded where they are denials, nothing applied."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import select

from agentledger.activities.retrieval import SqlRetriever
from agentledger.api.audit import api_denials
from agentledger.app.identity import verify_policy_approval
from agentledger.app.registry import register_pack, unregister_pack
from tests._temporal import Harness
from tests.api.conftest import Http, Signer
from tests.api.test_authentication import problem_type


async def test_malformed_json_is_a_typed_400(http: Http) -> None:
    response = await http("usr_73").post(
        "/api/runs", content=b'{"request": ', headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and problem_type(response) == "malformed-json"


async def test_a_body_of_the_wrong_shape_is_a_typed_422(http: Http) -> None:
    response = await http("usr_73").post("/api/runs", json={"request": "", "extra": 1})
    assert response.status_code == 422 and problem_type(response) == "invalid-request"
    assert response.json()["errors"]


async def test_an_oversized_body_is_refused_before_it_is_parsed(http: Http) -> None:
    big = b'{"request": "' + b"x" * 20_000 + b'"}'
    declared = await http("usr_73").post(
        "/api/runs", content=big, headers={"content-type": "application/json"}
    )
    assert declared.status_code == 413 and problem_type(declared) == "payload-too-large"

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(40):
            yield b"x" * 1024

    streamed = await http("usr_73").post("/api/runs", content=chunks())
    assert streamed.status_code == 413


async def test_unknown_ids_are_typed_404s(http: Http) -> None:
    ops = http("ops_lead_1")
    for path in ("/api/runs/run_nope", "/api/runs/run_nope/packets/sha256:00", "/api/nowhere"):
        response = await ops.get(path)
        assert response.status_code == 404 and problem_type(response) == "not-found", path
    decision = await ops.post("/api/runs/run_nope/approvals/apr_1/decision", json={"approve": True})
    assert decision.status_code == 404
    unknown_pack = await http("usr_73").post("/api/runs", json={"pack": "nope", "request": "hi"})
    assert unknown_pack.status_code == 404


async def test_a_policy_needs_the_policy_approver_role_and_the_denial_is_recorded(
    http: Http, harness: Harness
) -> None:
    body = {
        "document_id": "returns-2027",
        "revision": "v1",
        "markdown": "# Returns\n\n## Late {#late}\nRefund.\n",
    }
    refused = await http("agent_2").post("/api/policies", json=body)
    assert refused.status_code == 403 and refused.json()["reason_code"] == "missing_role"
    with harness.runtime.ledger.engine.connect() as conn:
        rows = conn.execute(select(api_denials.c.subject, api_denials.c.action)).all()
    assert [tuple(r) for r in rows] == [("agent_2", "add_policy")]

    ops = http("ops_lead_1")
    recorded = (await ops.get("/api/denials")).json()["denials"]
    assert [(d["subject"], d["reason_code"]) for d in recorded] == [("agent_2", "missing_role")]
    assert (await http("agent_2").get("/api/denials")).status_code == 403
    added = await ops.post("/api/policies", json=body)
    assert added.status_code == 201 and added.json()["approval_state"] == "draft"
    approved = await ops.post("/api/policies/returns-2027/revisions/v1/approve")
    assert approved.json()["approved_by"] == "ops_lead_1"
    # Signed like a run's approval, by the API's issuer on the verified caller's behalf.
    retriever = SqlRetriever(harness.runtime.ledger.engine)
    (revision,) = retriever.revisions("acme", "returns-2027")
    assertion = retriever.approval_assertion("acme", "returns-2027", "v1")
    assert assertion is not None
    key = harness.issuer.trusted_key()
    assert verify_policy_approval(assertion, key, revision) == "ops_lead_1"
    foreign = await ops.post("/api/policies", json={**body, "tenant_id": "globex"})
    assert foreign.status_code == 403 and foreign.json()["reason_code"] == "wrong_tenant"
    unknown = await ops.post("/api/policies/returns-2027/revisions/v9/approve")
    assert unknown.status_code == 404


async def test_ui_forms_without_the_sessions_csrf_token_are_refused(
    http: Http, local_signer: Signer
) -> None:
    browser = http("")
    login = await browser.post("/login", data={"token": local_signer.token("ops_lead_1")})
    assert login.status_code == 303 and "agentledger_token" in login.cookies
    inbox = await browser.get("/ui/approvals")
    assert inbox.status_code == 200
    assert inbox.headers["x-frame-options"] == "DENY"  # no framing an Approve button
    assert "frame-ancestors 'none'" in inbox.headers["content-security-policy"]
    token = browser.cookies["agentledger_csrf"]
    form = {"decision": "approve", "reason": ""}
    for forged in ({}, {"csrf_token": "guessed"}, {"csrf_token": token + "x"}):
        response = await browser.post("/ui/runs/run_x/approvals/apr_1", data={**form, **forged})
        assert response.status_code in (403, 422), forged
        if response.status_code == 403:
            assert "CSRF token does not match" in response.text
    cookie_only = await browser.post("/api/runs", json={"request": "refund ord_4821"})
    assert cookie_only.status_code == 401  # the ambient cookie never authorises an API change
    assert (await browser.get("/api/me")).json()["user_id"] == "ops_lead_1"
    passed = await browser.post(
        "/ui/runs/run_x/approvals/apr_1", data={**form, "csrf_token": token}
    )
    assert passed.status_code == 404  # past CSRF: the run is unknown


async def test_pages_without_a_session_go_to_the_login_form(http: Http) -> None:
    response = await http("").get("/ui/approvals")
    assert response.status_code == 303 and response.headers["location"] == "/login"
    refused = await http("").post("/login", data={"token": "not-a-token"})
    assert refused.status_code == 401 and re.search("Refused", refused.text)


async def test_a_decision_takes_only_true_or_false_for_approve(http: Http) -> None:
    """Not "yes", 1 or "false" read as a boolean: an approval is not guessed from a string."""
    ops = http("ops_lead_1")
    for spelled in ("yes", 1, "true", "false", 0, None):
        response = await ops.post(
            "/api/runs/run_nope/approvals/apr_1/decision", json={"approve": spelled}
        )
        assert response.status_code == 422, spelled
        assert problem_type(response) == "invalid-request"


async def test_a_run_of_an_installed_pack_that_cannot_load_is_refused_naming_it(
    http: Http,
) -> None:
    """Not "no pack": the pack is installed and broken, and the caller is told which and why."""
    register_pack("broken_dependency", "no_such_dependency_anywhere:PACK")
    try:
        response = await http("usr_73").post(
            "/api/runs", json={"pack": "broken_dependency", "request": "hi"}
        )
    finally:
        unregister_pack("broken_dependency")
    assert response.status_code == 503 and problem_type(response) == "pack-unavailable"
    detail = response.json()["detail"]
    assert "broken_dependency" in detail and "no_such_dependency_anywhere" in detail


async def test_starting_a_run_while_temporal_is_down_is_a_typed_503(
    harness: Harness, local_signer: Signer, external_signer: Signer, tmp_path: Path
) -> None:
    """A Temporal server that went away after the API connected (``agentledger stop`` under a
    running ``serve``) is ``unavailable`` (503, retry later), not an internal error."""
    import httpx
    from temporalio.client import Client

    from agentledger.api import create_app
    from agentledger.app.devserver import ensure_dev_server, free_port, stop_dev_server
    from tests.api.conftest import issuers, stack_issuer

    server = ensure_dev_server(tmp_path, port=free_port(), ui_port=None)
    try:
        down = await Client.connect(server.address)
    finally:
        stop_dev_server(tmp_path)
    app = create_app(
        harness.runtime.ledger,
        down,
        harness.settings.task_queue,
        [*issuers(local_signer, external_signer), stack_issuer(harness)],
        signer=harness.issuer,
    )
    headers = {"Authorization": f"Bearer {local_signer.token('usr_73')}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
        answer = await c.post("/api/runs", json={"request": "Where is my order ord_4821?"})
    assert answer.status_code == 503 and problem_type(answer) == "unavailable", answer.text
