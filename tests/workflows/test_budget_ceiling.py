"""A run's budget is the frozen profile's, narrowed by the work order, never widened by it."""

from __future__ import annotations

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack
from agentledger.domain.events import RunStarted
from agentledger.domain.fold import project
from agentledger.domain.run_loop import narrowed_budget
from agentledger.domain.workorder import Budget
from agentledger.packs.support.profile import SUPPORT_PROFILE
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


def test_each_limit_is_the_smaller_of_request_and_ceiling() -> None:
    ceiling = Budget(steps=12, tool_calls=6, tokens=60_000, wall_seconds=3600)
    asked = Budget(steps=300, tool_calls=2, tokens=10**9, wall_seconds=60)
    assert narrowed_budget(asked, ceiling) == Budget(
        steps=12, tool_calls=2, tokens=60_000, wall_seconds=60
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_work_order_cannot_buy_more_steps_than_the_profile_allows(
    harness: Harness,
) -> None:
    order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    greedy = order.model_copy(
        update={"budget": Budget(steps=300, tool_calls=300, tokens=10**9, wall_seconds=10**9)}
    )
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, greedy, issuer=harness.issuer
    )
    await harness.until_approval_or_end(handle.id)
    state = await client_ops.live_state(harness.client, handle.id)
    assert state.budget == SUPPORT_PROFILE.budgets
    await handle.terminate("done")
    (started,) = [e for e in harness.runtime.ledger.read(handle.id) if isinstance(e, RunStarted)]
    assert started.work_order.budget == SUPPORT_PROFILE.budgets
    assert project(harness.runtime.ledger.read(handle.id)).budget.steps == 12
