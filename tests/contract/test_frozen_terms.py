"""A tool call runs only under the tool version its attempt froze: a worker whose pack code is
another version records a failed receipt (nothing happened) instead of acting in the run's name."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from agentledger.activities.ledger import Ledger
from agentledger.activities.messages import ToolStepInput
from agentledger.activities.ports import Pack, ToolImplementation
from agentledger.activities.run_activities import RunActivities
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.manifest import resolve_manifest
from agentledger.packs.support import PACK
from agentledger.packs.support.seed import PRINCIPALS, seed

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)


class _Redeployed:
    """The same tool under a contract a later deploy bumped."""

    def __init__(self, tool: ToolImplementation) -> None:
        self._tool = tool
        self.contract = dataclasses.replace(tool.contract, version=tool.contract.version + "+1")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)


@pytest.fixture
def ledger(database_url: str) -> Iterator[Ledger]:
    with Ledger.open(database_url) as opened:
        seed(opened.engine)
        yield opened


def _call(manifest_hash: str) -> ToolStepInput:
    return ToolStepInput(
        run_id="run-frozen",
        pack="support",
        operation_id="op_1",
        tool="get_order",
        arguments={"order_id": "ord_4821"},
        idempotency_key=None,
        principal=next(p for p in PRINCIPALS if p.user_id == "usr_73"),
        now=NOW,
        manifest_hash=manifest_hash,
    )


@pytest.mark.parametrize("redeployed", [False, True])
def test_a_tool_runs_only_under_the_version_its_attempt_froze(
    ledger: Ledger, redeployed: bool
) -> None:
    manifest = resolve_manifest(
        PACK.profile,
        attempt_id="run-frozen/1",
        work_order_digest=sha256_hex("order"),
        memory_snapshot="none",
        policy_version="returns-2026-08",
        contracts=PACK.contracts,
    )
    ledger.put_manifest(manifest)
    tools = {n: _Redeployed(t) if redeployed else t for n, t in PACK.tools.items()}
    deployed: Pack = dataclasses.replace(PACK, tools=tools)
    activities = RunActivities(ledger, {}, packs=lambda name: deployed, trusted_keys=())

    receipt = activities.execute_tool(_call(manifest.hash))

    if redeployed:
        assert (receipt.status, receipt.error_code) == ("failed", "contract_changed")
        assert receipt.facts == () and "did not run" in (receipt.error_message or "")
    else:
        assert receipt.status == "succeeded" and receipt.facts
