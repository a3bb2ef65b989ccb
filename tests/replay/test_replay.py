"""Checked-in histories must replay on the current workflow code (determinism guard)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from agentledger.app import PASSTHROUGH
from packs import register_pack
from workflows import AgentRunWorkflow

HISTORIES = sorted(Path(__file__).with_name("histories").glob("*.json"))


def test_the_recorded_histories_are_checked_in() -> None:
    names = {p.stem for p in HISTORIES}
    assert names >= {"refund_approved", "refund_rejected", "loop_continue_as_new_0"}


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_a_recorded_history_replays_without_nondeterminism(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(
        workflows=[AgentRunWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
        ),
    )
    register_pack("bench_can", "bench._noop_pack:CONTINUING_PACK")  # the loop histories' pack
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
