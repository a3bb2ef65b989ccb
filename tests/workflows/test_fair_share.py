"""A run's model and tool tasks carry its tenant as their fairness key, so the server dispatches
one tenant's burst and another's task fairly (the dev server runs with matching.enableFairness;
``app.devserver``)."""

from __future__ import annotations

import pytest
from temporalio.api.enums.v1 import EventType

from bench.harness import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


async def test_model_and_tool_tasks_carry_the_runs_tenant_as_fairness_key(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    for approval_id in state.pending_approvals:
        await harness.decide(run_id, approval_id, "ops_lead_1")
    await harness.finish(run_id)
    tenant = harness.principal("usr_73").tenant_id
    scheduled = {}
    async for event in harness.client.get_workflow_handle(run_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            keys = scheduled.setdefault(attributes.activity_type.name, set())
            keys.add(attributes.priority.fairness_key)
    assert scheduled["model_step"] == {tenant}
    assert scheduled["execute_tool"] == {tenant}
    assert scheduled["append_events"] == {""}  # the run's own bookkeeping needs no share
