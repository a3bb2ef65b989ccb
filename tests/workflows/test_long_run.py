"""Long runs: continue-as-new at completed-operation boundaries keeps every fact and every event."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from temporalio.client import Client

from agentledger.activities.packets import build_step_packet
from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack, register_pack
from agentledger.domain.compaction import MAX_CARRIED_BYTES, can_compact, compact
from agentledger.domain.events import RunEvent
from agentledger.domain.fold import project, state_hash
from agentledger.domain.manifest import resolve_manifest
from agentledger.packs import Pack
from agentledger.packs.support.profile import SUPPORT_PROFILE
from bench import _noop_pack
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, approve_pending

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
# Registered at import, before any worker is built, so workers know its "loop" model.
register_pack("bench_long", "bench._noop_pack:LONG_PACK")
register_pack("bench_bloat", "bench._noop_pack:BLOATING_PACK")


async def chain_lengths(client: Client, run_id: str) -> list[int]:
    lengths = []
    async for execution in client.list_workflows(f'WorkflowId = "{run_id}"'):
        history = await client.get_workflow_handle(run_id, run_id=execution.run_id).fetch_history()
        lengths.append(len(history.events))
    return lengths


async def run_loop(harness: Harness, pack: Pack, run_id: str) -> tuple[str, list[RunEvent]]:
    """Run a bench loop pack to its end: its status and its ledger, checked to be contiguous."""
    order = pack.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, run_id=run_id, issuer=harness.issuer
    )
    result = await handle.result()
    events = harness.runtime.ledger.read(run_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    return result.status, events


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_thousand_step_run_continues_as_new_and_keeps_every_event(
    harness: Harness,
) -> None:
    pack = _noop_pack.LONG_PACK
    status, events = await run_loop(harness, pack, "long-run")

    assert status == "completed"
    calls = [e for e in events if e.kind == "tool_receipt_recorded"]
    assert len(calls) == _noop_pack.LONG_STEPS  # none repeated, none lost
    lengths = await chain_lengths(harness.client, "long-run")
    assert len(lengths) > 1  # it did continue as new
    limit = pack.profile.compaction.max_history_events
    assert max(lengths) <= limit + 40  # the check runs after each step, a step adds < 40
    compactions = [e for e in events if e.kind == "history_compacted"]
    assert len(compactions) == len(lengths) - 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_state_too_large_to_carry_ends_the_run_cleanly_with_every_event_kept(
    harness: Harness,
) -> None:
    status, events = await run_loop(harness, _noop_pack.BLOATING_PACK, "bloating-run")

    assert status == "failed"
    assert [e.kind for e in events[-2:]] == ["history_compacted", "run_failed"]
    assert events[-1].reason_code == "state_too_large"  # type: ignore[union-attr]
    assert len(project(events).model_dump_json()) > MAX_CARRIED_BYTES
    receipts = [e for e in events if e.kind == "tool_receipt_recorded"]
    assert 0 < len(receipts) < _noop_pack.BLOATING_PACK.profile.budgets.tool_calls


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_refund_run_compacted_at_any_boundary_gives_the_same_facts_and_decisions(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    await approve_pending(harness, run_id)
    events = await harness.finish(run_id)
    manifest = resolve_manifest(
        SUPPORT_PROFILE,
        attempt_id="t",
        work_order_digest="d",
        memory_snapshot="none",
        policy_version="p",
        contracts=get_pack("support").contracts,
    )
    playbook = get_pack("support").models["playbook"]
    cuts = [n for n in range(1, len(events)) if can_compact(project(events[:n]))]
    assert cuts, "the refund run has completed-operation boundaries"
    for n in cuts:
        before = project(events[:n])
        marker = compact(before, recorded_at=NOW, manifest_hash=events[0].manifest_hash)
        rest = [e.model_copy(update={"seq": e.seq + 1}) for e in events[n:]]
        full, short = project([*events[:n], marker, *rest]), project([marker, *rest])
        assert state_hash(short) == state_hash(full)
        assert short.last_answer == full.last_answer
        step = "draft_answer" if before.phase == "answering" else "choose_next_action"
        decisions = []
        for state in (project([*events[:n], marker]), project([marker])):
            packet = build_step_packet(get_pack("support"), manifest, step, state, NOW)
            decisions.append(playbook.decide(packet, manifest.model).output)
        assert decisions[0] == decisions[1]
