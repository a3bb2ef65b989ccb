"""A pack installed after ``serve`` started: starting a run of it says to restart the service
(503, its own problem type), not that the pack does not exist."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.conftest import Http
from tests.api.test_authentication import problem_type
from tests.workflows.test_pack_installed_later import install
from tests.workflows.test_pack_installed_later import later as later  # the fixture

pytestmark = pytest.mark.temporal


@pytest.fixture
def installed_since(later: Path) -> Iterator[Path]:
    install(later)
    yield later


async def test_a_run_of_a_pack_installed_after_the_service_started_says_to_restart_it(
    http: Http, installed_since: Path
) -> None:
    started = await http("usr_73").post("/api/runs", json={"pack": "acme_late", "request": "hi"})
    assert started.status_code == 503 and problem_type(started) == "pack-installed-after-start"
    assert "agentledger serve" in started.json()["detail"]
    unknown = await http("usr_73").post("/api/runs", json={"pack": "nope", "request": "hi"})
    assert unknown.status_code == 404
