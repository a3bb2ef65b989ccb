"""``agentledger check-replay`` names the runs a deploy would break before it reaches them: the
code as installed replays a parked run cleanly; a workflow that decides differently does not."""

from __future__ import annotations

import asyncio

import pytest
from temporalio import workflow
from temporalio.common import RawValue

from agentledger.cli.replay import recent_histories, replay_all, runs_query
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # about code, not storage
]


@workflow.defn(name="AgentRun", sandboxed=False)
class ChangedAgentRun:
    """A deploy that forgot a patch: the run now waits on a timer where it used to prepare."""

    @workflow.run
    async def run(self, raw: RawValue) -> None:
        await workflow.sleep(3600)


async def test_a_parked_run_replays_on_this_code_and_a_changed_workflow_is_named(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    await harness.until_approval_or_end(run_id)
    query = runs_query(harness.settings.task_queue, running_only=True)
    for _ in range(100):  # visibility follows the run by a moment
        histories = await recent_histories(harness.client, query, limit=10)
        if histories:
            break
        await asyncio.sleep(0.1)
    assert [h.workflow_id for h in histories] == [run_id]

    (verdict,) = await replay_all(histories, converter=harness.client.data_converter)
    assert verdict.run_id == run_id and verdict.problem is None

    (changed,) = await replay_all(
        histories, workflows=[ChangedAgentRun], converter=harness.client.data_converter
    )
    assert changed.problem is not None and "Nondeterminism" in changed.problem
    await harness.client.get_workflow_handle(run_id).terminate("checked")
