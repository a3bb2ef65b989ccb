"""Recorded firings of the housekeeping workflow replay on its current code (``housekeeping/``;
``record.py`` records them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from agentledger.app.replayer import replayer
from agentledger.workflows.housekeeping import HousekeepingWorkflow

HISTORIES = sorted(Path(__file__).with_name("housekeeping").glob("*.json"))


def test_a_firing_is_recorded() -> None:
    assert {p.stem for p in HISTORIES} >= {"housekeeping_v1"}


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_a_recorded_firing_replays_without_nondeterminism(path: Path) -> None:
    history = WorkflowHistory.from_json(f"replay-{path.stem}", path.read_text())
    result = await replayer([HousekeepingWorkflow]).replay_workflow(history)
    assert result.replay_failure is None
