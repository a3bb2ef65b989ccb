"""A deploy while runs wait: workers of build v1 and v2 in one worker deployment, every run pinned
to the build that started it. A refund parked on approval under v1 finishes on v1 after v2 (a
changed workflow that could not replay it) became current; new runs start on v2."""

from __future__ import annotations

import dataclasses
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.common import RawValue

from agentledger.app.devserver import DevServer
from agentledger.app.runtime import Runtime
from agentledger.cli.deploy import builds, make_current
from agentledger.workflows import AgentRunWorkflow, RunOutcome
from bench._stack import open_stack
from bench.harness import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # routing, not storage
]


@workflow.defn(name="AgentRun", sandboxed=False)  # this module imports the test stack
class AgentRunV2(AgentRunWorkflow):
    """Build v2: waits a moment before anything else, so it cannot replay a v1 history."""

    @workflow.run
    async def run(self, raw: RawValue) -> RunOutcome:
        await workflow.sleep(0.01)
        return await super().run(raw)


async def _builds_of(handle: WorkflowHandle[object, object]) -> set[str]:
    """The builds that completed the run's workflow tasks."""
    found = set()
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            found.add(event.workflow_task_completed_event_attributes.deployment_version.build_id)
    return found


async def test_a_run_parked_under_v1_finishes_on_v1_while_new_runs_start_on_v2(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> None:
    name = uuid.uuid4().hex[:8]
    base = await open_stack(tmp_path, temporal_server.address, database_url, f"deploy-{name}")
    versioned = dataclasses.replace(base.settings, deployment=f"agentledger-{name}")

    def build(build_id: str) -> Harness:
        settings = dataclasses.replace(versioned, build_id=build_id)
        return dataclasses.replace(
            base, runtime=Runtime(settings, base.runtime.ledger), settings=settings
        )

    v1, v2 = build("v1"), build("v2")
    async with AsyncExitStack() as fleet:
        await fleet.enter_async_context(v1.runtime.worker(v1.client))
        await make_current(v1.client, "agentledger-" + name, "v1")
        parked = await v1.start(REQUEST)
        state = await v1.until_approval_or_end(parked)
        (approval_id,) = state.pending_approvals

        (worker_v2,) = v2.runtime.workers(v2.client, workflow=AgentRunV2)
        await fleet.enter_async_context(worker_v2)
        await make_current(v2.client, "agentledger-" + name, "v2")
        assert (await builds(v2.client, "agentledger-" + name))["v2"] == "current"

        fresh = await v2.start("Can I get a refund for order ord_5100? It came late.", "usr_88")
        await v2.until_approval_or_end(fresh)
        await v1.decide(parked, approval_id, "ops_lead_1")
        parked_handle = v1.client.get_workflow_handle(parked)
        await parked_handle.result()
        assert v1.runtime.ledger.read(parked)[-1].kind == "run_completed"
        await v2.client.get_workflow_handle(fresh).terminate("checked")

    assert await _builds_of(parked_handle) == {"v1"}
    assert await _builds_of(v2.client.get_workflow_handle(fresh)) == {"v2"}
    assert refund_rows(v1) == 1
