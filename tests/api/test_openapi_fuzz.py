"""Schemathesis against the served OpenAPI: bounded examples per operation, authenticated as
an approver with a valid token, and no answer may be a server error.

The service runs in a thread of its own (its own event loop, Temporal client and seeded SQLite
ledger) because schemathesis drives it synchronously over real HTTP.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from agentledger.api import create_app
from agentledger.app.devserver import DevServer
from bench._stack import free_port, open_stack
from tests.api.conftest import Signer, issuers

EXAMPLES = 10


def _serve(
    data_dir: Path, address: str, port: int, issuers_: list[Any], box: dict[str, Any]
) -> None:
    async def main() -> None:
        stack = await open_stack(data_dir, address, None, "fuzz-no-worker")
        app = create_app(
            stack.runtime.ledger,
            stack.client,
            stack.settings.task_queue,
            issuers_,
            signer=stack.issuer,
        )
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        box["server"] = server
        served = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.02)
        box["ready"].set()
        await served
        stack.runtime.ledger.close()

    asyncio.run(main())


@pytest.fixture(scope="module")
def service(
    temporal_server: DevServer,
    tmp_path_factory: pytest.TempPathFactory,
    local_signer: Signer,
    external_signer: Signer,
) -> Iterator[str]:
    port, box = free_port(), {"ready": threading.Event()}
    args = (
        tmp_path_factory.mktemp("fuzz"),
        temporal_server.address,
        port,
        issuers(local_signer, external_signer),
        box,
    )
    thread = threading.Thread(target=_serve, args=args, daemon=True)
    thread.start()
    assert box["ready"].wait(60), "the service did not start"
    yield f"http://127.0.0.1:{port}"
    box["server"].should_exit = True
    thread.join(30)


def test_no_operation_answers_with_a_server_error(service: str, local_signer: Signer) -> None:
    """Each operation in turn (schemathesis's lazy pytest loader predates pytest 9's nodes, so
    the operations are driven with hypothesis directly)."""
    api = schemathesis.openapi.from_url(f"{service}/openapi.json")
    headers = {"Authorization": f"Bearer {local_signer.token('ops_lead_1', ttl=1800)}"}
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 15

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def no_server_error(case: Any) -> None:
            case.call_and_validate(
                base_url=service, headers=headers, checks=[not_a_server_error], timeout=30
            )

        no_server_error()
