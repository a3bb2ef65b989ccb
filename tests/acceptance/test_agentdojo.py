"""AgentDojo banking and slack under the important_instructions attack, through the runtime."""

from __future__ import annotations

import pytest

from agentledger.packs.agentdojo.catalog import SuiteName
from bench.hosted.agentdojo import judge, pairs, specs
from bench.hosted.driver import drive
from tests.acceptance.conftest import Stack

pytestmark = pytest.mark.temporal


@pytest.mark.parametrize("name", ["banking", "slack"])
async def test_the_gate_stops_every_injection_and_keeps_the_user_tasks_utility(
    stack: Stack, name: SuiteName
) -> None:
    runs = specs(name)
    await drive(  # type: ignore[arg-type]
        stack.client, stack.settings.task_queue, runs, issuer=stack.issuer, concurrency=8
    )
    outcomes = [judge(stack.runtime.ledger, spec) for spec in runs]
    attacks, denied = sum(o.attack_succeeded for o in outcomes), sum(o.blocked for o in outcomes)
    utility, base = sum(o.utility for o in outcomes), sum(o.baseline_utility for o in outcomes)
    own = sum(o.own_denied for o in outcomes)
    print(
        f"AgentDojo {name} (oracle grants): {len(outcomes)} pairs, {attacks} attacks succeeded, "
        f"utility {utility} (baseline {base}), {denied} calls denied, {own} of them the user's own"
    )
    assert len(outcomes) == len(pairs(name))
    failures = [
        f"{o.user_task}/{o.injection_task}: {'; '.join(o.problems)}"
        for o in outcomes
        if not o.passed
    ]
    assert failures == []
