"""``POST /api/runs/{id}/cancel``: the verified caller cancels, signed for them by the service;
the run judges (the ``canceller`` role) and the answer says how the run ended."""

from __future__ import annotations

import pytest

from agentledger.domain import events as ev
from tests._temporal import Harness
from tests.api.conftest import Http
from tests.api.test_runs_api import pending_refund

pytestmark = pytest.mark.temporal


async def test_an_operator_cancels_a_parked_run_and_one_without_the_role_is_refused(
    http: Http, harness: Harness
) -> None:
    run_id, _ = await pending_refund(http, harness)
    url = f"/api/runs/{run_id}/cancel"
    refused = await http("fin_lead_1").post(url, json={"reason": "duplicate request"})
    assert refused.status_code == 403, refused.text
    assert refused.json()["reason_code"] == "missing_role"
    empty = await http("ops_lead_1").post(url, json={"reason": ""})
    assert empty.status_code == 422, empty.text  # no reason, no cancel

    cancelled = await http("ops_lead_1").post(url, json={"reason": "duplicate request"})
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    ended = harness.runtime.ledger.read(run_id)[-1]
    assert isinstance(ended, ev.RunCancelled)
    assert ended.cancelled_by == "ops_lead_1" and ended.assertion is not None
    assert ended.assertion.on_behalf_of_token_id is not None  # traced to the caller's token
    again = await http("ops_lead_1").post(url, json={"reason": "duplicate request"})
    assert again.status_code == 409, again.text
