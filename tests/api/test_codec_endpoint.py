"""The payload codec endpoint the Temporal UI is pointed at (``--ui-codec-endpoint``): an
auditor's bearer token opens the payloads of a run's history, which the server holds sealed;
anyone else is refused (recorded), and a payload no key of this ring sealed is a typed 422."""

from __future__ import annotations

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from agentledger.app.payloads import ENCODING, KEY_ID
from agentledger.domain.principal import Principal
from tests._temporal import Harness
from tests.api.conftest import Http
from tests.api.test_runs_api import pending_refund


async def test_an_auditor_opens_a_sealed_history_and_nobody_else_does(
    http: Http, harness: Harness
) -> None:
    run_id, _ = await pending_refund(http, harness)
    history = await harness.client.get_workflow_handle(run_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes.input
    assert started.payloads[0].metadata["encoding"] == ENCODING
    body = json_format.MessageToJson(started)
    auditor = Principal(user_id="audit_1", tenant_id="acme", roles=frozenset({"auditor"}))
    harness.runtime.ledger.put_principal(auditor)

    opened = await http("audit_1").post("/codec/decode", content=body)
    assert opened.status_code == 200, opened.text
    (payload,) = json_format.Parse(opened.text, Payloads()).payloads
    assert b"ord_4821" in payload.data and payload.metadata["encoding"] == b"json/plain"
    resealed = await http("audit_1").post("/codec/encode", content=opened.text)
    (sealed,) = json_format.Parse(resealed.text, Payloads()).payloads
    assert sealed.metadata["encoding"] == ENCODING and b"ord_4821" not in sealed.data

    for who, status in (("ops_lead_1", 403), ("usr_73", 403), ("", 401)):
        refused = await http(who).post("/codec/decode", content=body)
        assert refused.status_code == status, (who, refused.text)
    forged = Payloads(payloads=[type(sealed)(metadata={**sealed.metadata, KEY_ID: b"gone"},
                                             data=sealed.data)])  # fmt: skip
    unknown = await http("audit_1").post("/codec/decode", content=json_format.MessageToJson(forged))
    assert unknown.status_code == 422 and "lacks" in unknown.json()["detail"]
    junk = await http("audit_1").post("/codec/decode", content="{not json")
    assert junk.status_code == 400
