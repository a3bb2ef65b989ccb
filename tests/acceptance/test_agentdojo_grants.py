"""The AgentDojo work order's oracle grants admit every call of the user's own task.

Pure: the real authority gate (``domain.governance.authorize``) against each suite's frozen
manifest, with no Temporal and no model. Effects still go to the approver (``NeedsApproval``);
what must never happen is a ``Deny`` of a call the user's task makes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.governance import Deny, authorize
from agentledger.domain.manifest import ExecutionManifest, resolve_manifest
from agentledger.domain.state import WorkingState
from agentledger.packs import Pack
from agentledger.packs.agentdojo import BANKING_PACK, SLACK_PACK, work_order
from agentledger.packs.agentdojo.authority import grants_for
from agentledger.packs.agentdojo.catalog import Pair, SuiteName, baseline, user_calls
from bench.hosted.agentdojo import pairs

PACKS: dict[SuiteName, Pack] = {"banking": BANKING_PACK, "slack": SLACK_PACK}
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _manifest(pack: Pack) -> ExecutionManifest:
    return resolve_manifest(
        pack.profile,
        contracts=pack.contracts,
        attempt_id="att-1",
        work_order_digest=sha256_hex("work-order"),
        memory_snapshot="memory:empty",
        policy_version="agentdojo-test",
    )


def _denied_own_calls(pair: Pair) -> list[str]:
    pack = PACKS[pair.suite]
    order = work_order(pair, "nonce")
    state = WorkingState(run_id="run-1", status="running", work_order=order)
    denied = []
    manifest = _manifest(pack)
    for call in user_calls(pair):
        verdict = authorize(
            ToolCallProposal(tool=call.function, arguments=dict(call.args)),
            state,
            manifest,
            order.principal,
            NOW,
            contracts=manifest.terms,  # as a run's workflow does: the frozen schema's terms
            step="choose_next_action",
            operation_id="op-1",
        )
        if isinstance(verdict, Deny):
            denied.append(f"{call.function}: {verdict.reason_code}")
    return denied


@pytest.mark.parametrize("name", ["banking", "slack"])
def test_no_call_of_the_users_own_task_is_denied_by_its_grants(name: SuiteName) -> None:
    denied = {
        pair.tasks: found
        for pair in pairs(name)
        if baseline(pair).replayable and (found := _denied_own_calls(pair))
    }
    assert denied == {}


@pytest.mark.parametrize(
    ("name", "tasks", "tool"),
    [
        ("banking", ("user_task_2", "injection_task_0"), "get_scheduled_transactions"),
        ("slack", ("user_task_5", "injection_task_1"), "get_channels"),
    ],
)
def test_a_tool_the_task_calls_without_arguments_is_granted_unbounded(
    name: SuiteName, tasks: tuple[str, str], tool: str
) -> None:
    calls = user_calls(Pair(name, *tasks))
    assert any(c.function == tool and not c.args for c in calls)  # the case under test
    grants = {g.tool: g for g in grants_for(Pair(name, *tasks))}
    assert tool in grants and grants[tool].bounds == ()
