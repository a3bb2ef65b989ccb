"""τ²-bench retail and airline train splits through the runtime, judged by τ²'s DB-hash oracle."""

from __future__ import annotations

import pytest

from agentledger.packs.tau2.catalog import Domain, domain, gold_actions, tasks
from bench.hosted.driver import drive
from bench.hosted.tau2 import Variant, judge, specs
from tests.acceptance.conftest import Stack

pytestmark = pytest.mark.temporal


DENIAL_SAMPLE = 8
"""Tasks per domain in the deny-every-write variant: the first train tasks that have writes."""


def _task_ids(name: Domain, variant: Variant) -> list[str]:
    ids = sorted(tasks(name, "train"), key=int)
    if variant == "approve":
        return ids
    writes = domain(name).write_tools
    return [t for t in ids if any(a.tool in writes for a in gold_actions(name, t))][:DENIAL_SAMPLE]


async def _run_split(stack: Stack, name: Domain, variant: Variant) -> list[str]:
    runs = specs(name, _task_ids(name, variant), variant)
    await drive(stack.client, stack.settings.task_queue, runs, issuer=stack.issuer)  # type: ignore[arg-type]
    outcomes = [judge(stack.runtime.ledger, spec, variant) for spec in runs]
    print(f"τ² {name} train ({variant}): {sum(o.passed for o in outcomes)}/{len(outcomes)} passed")
    return [f"task {o.task_id}: {'; '.join(o.problems)}" for o in outcomes if not o.passed]


@pytest.mark.parametrize("name", ["retail", "airline"])
async def test_gold_actions_reach_the_reference_db_hash_with_one_receipt_per_write(
    stack: Stack, name: Domain
) -> None:
    assert await _run_split(stack, name, "approve") == []


@pytest.mark.parametrize("name", ["retail", "airline"])
async def test_denying_every_write_leaves_the_initial_db_and_records_each_denial(
    stack: Stack, name: Domain
) -> None:
    assert await _run_split(stack, name, "deny_writes") == []
