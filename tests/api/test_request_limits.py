"""The API states the request's real limit in its schema and refuses, up front, what no step can
hold or what says nothing: a run is never accepted only to fail as ``insufficient_context``."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from agentledger.domain.request_limit import MAX_REQUEST_CHARS
from tests.api.conftest import Http
from tests.api.test_authentication import problem_type

pytestmark = pytest.mark.temporal


def test_the_schema_gives_the_requests_real_limit(app: FastAPI) -> None:
    field = app.openapi()["components"]["schemas"]["StartRun"]["properties"]["request"]
    assert field["maxLength"] == MAX_REQUEST_CHARS < 20_000
    assert field["minLength"] == 1


@pytest.mark.parametrize("request_text", ["x" * 20_000, "ord " * (MAX_REQUEST_CHARS // 4)])
async def test_a_request_no_step_can_hold_is_refused_before_any_run(
    http: Http, request_text: str
) -> None:
    response = await http("usr_73").post("/api/runs", json={"request": request_text})
    assert response.status_code in (413, 422), response.text
    assert problem_type(response) in ("invalid-request", "payload-too-large", "work-order-refused")


async def test_a_blank_request_is_refused_like_an_empty_one(http: Http) -> None:
    response = await http("usr_73").post("/api/runs", json={"request": "   "})
    assert response.status_code == 422 and problem_type(response) == "work-order-refused"
    assert "the request is empty" in response.text
