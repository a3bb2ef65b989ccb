"""Checked-in histories must replay on the current workflow code (determinism guard), and what
the replay derives must match what was recorded: the events, their projection and the state
carried across continue-as-new, and every context packet's hash."""

from __future__ import annotations

import dataclasses
from itertools import pairwise
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

import bench._chat_pack  # noqa: F401  (registers the conversation history's pack)
from agentledger.app import runtime as app
from agentledger.app.replayer import replayer
from agentledger.app.runtime import pack_contracts
from agentledger.domain.events import HistoryCompacted
from agentledger.domain.fold import project, state_hash
from agentledger.domain.tools import ToolContract
from tests.replay._checks import (
    event_mismatches,
    packet_mismatches,
    projection_mismatches,
    step_input_mismatches,
)
from tests.replay._recorded import (
    PREFERENCE_SEEDED_AT,
    RecordedRun,
    read_history,
    recorded_memories,
    register_loop_packs,
)
from tests.replay._replayed import ReplayedRun, replay

HISTORIES = sorted(Path(__file__).with_name("histories").glob("*.json"))
# Chains of runs, each in the order they ran (record.py numbers them: loop_continue_as_new_0, …;
# loop_continue_as_new_v9_0, …).
CHAINS: dict[str, list[Path]] = {}
for _path in HISTORIES:
    _chain, _, _index = _path.stem.rpartition("_")
    if _chain.startswith("loop_continue_as_new") and _index.isdigit():
        CHAINS.setdefault(_chain, []).append(_path)
for _runs_of_chain in CHAINS.values():
    _runs_of_chain.sort(key=lambda p: int(p.stem.rpartition("_")[2]))


def test_the_recorded_histories_are_checked_in() -> None:
    names = {p.stem for p in HISTORIES}
    assert names >= {"refund_approved", "refund_rejected", "loop_continue_as_new_0"}
    # The support pack as declared with agentledger.sdk (recorded since its rewrite).
    assert names >= {"refund_approved_sdk_v1", "refund_rejected_sdk_v1"}


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_a_recorded_history_replays_without_nondeterminism(path: Path) -> None:
    # Under its own workflow id, as Temporal replays it: a run binds signed decisions to its id.
    history = WorkflowHistory.from_json(read_history(path).started.run_id, path.read_text())
    register_loop_packs()
    result = await replayer().replay_workflow(history)
    assert result.replay_failure is None


_RUNS: dict[Path, tuple[RecordedRun, ReplayedRun]] = {}


async def _runs(path: Path) -> tuple[RecordedRun, ReplayedRun]:
    """Each history decoded and replayed once for the whole module (the checks only read)."""
    if path not in _RUNS:
        register_loop_packs()
        recorded = read_history(path)
        _RUNS[path] = recorded, await replay(path, recorded.started.run_id)
    return _RUNS[path]


def _report(problems: list[str], shown: int = 20) -> str:
    more = f"\n… and {len(problems) - shown} more" if len(problems) > shown else ""
    return "\n".join(problems[:shown]) + more


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_the_replayed_run_emits_exactly_the_recorded_events(path: Path) -> None:
    recorded, replayed = await _runs(path)
    assert replayed.replay_failure is None
    assert recorded.events, f"{path.stem}: no events recorded"
    problems = event_mismatches(recorded, replayed)
    assert not problems, _report(problems)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_every_model_step_is_sent_what_it_was_sent_when_recorded(path: Path) -> None:
    recorded, replayed = await _runs(path)
    problems = step_input_mismatches(recorded, replayed)
    assert not problems, _report(problems)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_the_recorded_events_project_to_the_replayed_and_the_carried_state(
    path: Path,
) -> None:
    recorded, replayed = await _runs(path)
    problems = projection_mismatches(recorded, replayed)
    assert not problems, _report(problems)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_every_recorded_packet_hash_is_rebuilt_from_its_recorded_step(path: Path) -> None:
    recorded, replayed = await _runs(path)
    problems = packet_mismatches(recorded, replayed, recorded_memories(recorded))
    assert not problems, _report(problems)


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_each_continued_run_starts_from_the_compacted_state_its_predecessor_carried(
    chain: str,
) -> None:
    runs = [read_history(p) for p in CHAINS[chain]]
    assert len(runs) >= 2 and runs[-1].continued_as_new is None
    for before, after in pairwise(runs):
        carried, resumed = before.continued_as_new, after.started.continued
        assert carried is not None and resumed is not None, f"{after.name}: not a continuation"
        assert carried == resumed, f"{after.name} does not start from what {before.name} carried"
        # The compaction event that closed the previous run is the head of the next run's log.
        head = before.events[max(before.events)]
        assert isinstance(head, HistoryCompacted), f"{before.name} ends with {head.kind}"
        assert state_hash(project([head])) == resumed.state_hash, (
            f"{after.name}: state_hash(project([{before.name} #{head.seq}])) "
            f"{state_hash(project([head]))} != carried {resumed.state_hash}"
        )


def test_a_windowed_chain_carries_its_window_and_an_archive_of_the_rest() -> None:
    runs = [read_history(p) for p in CHAINS["loop_continue_as_new_v10"]]
    carried = [run.continued_as_new for run in runs[:-1]]
    assert all(c is not None for c in carried)
    states = [c.state for c in carried if c is not None]
    for state in states:
        assert len(state.completed_actions) == len(state.decisions) == 5
        assert state.archived is not None and state.archived.through_seq < state.last_seq
    archived = [s.archived.entries["completed_actions"] for s in states if s.archived]
    assert archived == sorted(archived) and archived[0] > 0  # each carries more away
    sizes = [len(s.model_dump_json()) for s in states]
    assert max(sizes) - min(sizes) < 0.05 * min(sizes), sizes


@pytest.mark.parametrize("name", sorted(PREFERENCE_SEEDED_AT))
def test_a_recovered_memory_seed_time_precedes_its_run_by_moments(name: str) -> None:
    recorded = read_history(Path(__file__).with_name("histories") / f"{name}.json")
    lead = recorded.started_at - PREFERENCE_SEEDED_AT[name]
    assert 0 < lead.total_seconds() < 5, f"{name}: seeded {lead} before the run started"


def _bumped(name: str) -> dict[str, ToolContract]:
    """The pack's contracts as a later deploy might ship them: every version moved on."""
    return {
        tool: dataclasses.replace(contract, version=f"{contract.version}+next")
        for tool, contract in pack_contracts(name).items()
    }


@pytest.mark.parametrize(
    ("name", "replays_unchanged"),
    [
        ("refund_approved_sdk_v1", True),
        ("refund_approved_v9", True),
        ("refund_approved_v8", True),
        ("refund_approved_v7", True),
        ("refund_approved_v6", True),
        ("refund_approved_v5", False),
    ],
)
async def test_a_deploy_that_bumps_a_contract_version_changes_no_run_that_froze_its_terms(
    name: str, replays_unchanged: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run prepared with frozen tool terms replays event for event against bumped pack code;
    one prepared before terms were frozen (v5) was judged by live code, and the same bump turns
    its recorded Allow into a contract_changed denial: the hazard the frozen terms remove."""
    path = Path(__file__).with_name("histories") / f"{name}.json"
    recorded = read_history(path)
    monkeypatch.setattr(app, "pack_contracts", _bumped)
    replayed = await replay(path, recorded.started.run_id)
    problems = event_mismatches(recorded, replayed)
    if replays_unchanged:
        assert replayed.replay_failure is None
        assert not problems, _report(problems)
    else:
        denied = [e for e in replayed.events if e.kind == "tool_call_denied"]
        assert denied and denied[0].reason_code == "contract_changed", _report(problems)


@pytest.mark.parametrize("name", ["refund_approved_sdk_v1", "refund_rejected_sdk_v1"])
def test_the_sdk_declared_support_pack_froze_the_terms_its_tools_declare(name: str) -> None:
    """What the SDK-declared pack froze is what its decorators state (names, versions, schema
    hashes, approval rules), the same terms the hand-written contracts had."""
    manifest = read_history(Path(__file__).with_name("histories") / f"{name}.json").manifest
    assert manifest is not None
    live = {tool: contract.terms() for tool, contract in pack_contracts("support").items()}
    assert manifest.terms == live


def test_the_single_use_conversation_recorded_its_refused_copy_and_foreign_reply() -> None:
    """conversation_v10 covers both patches: the copy of a taken reply refused as replayed, a
    reply signed for an unbound issuer's caller refused after the directory was asked."""
    recorded = read_history(Path(__file__).with_name("histories") / "conversation_v10.json")
    events = [recorded.events[seq] for seq in sorted(recorded.events)]
    refused = [e.reason_code for e in events if e.kind == "reply_refused"]
    taken = [e.text for e in events if e.kind == "user_replied"]
    assert refused == ["assertion_replayed", "assertion_foreign_issuer"]
    assert taken == ["red, please", "actually blue"]


def test_the_notified_run_recorded_each_channel_and_was_decided_as_without() -> None:
    """refund_notified_v1: both channels' outcomes recorded in the manifest's order, before the
    approval was granted; the manifest names the channels and nothing of their addresses."""
    recorded = read_history(Path(__file__).with_name("histories") / "refund_notified_v1.json")
    events = [recorded.events[seq] for seq in sorted(recorded.events)]
    kinds = [e.kind for e in events]
    outcomes = [
        (e.channel, getattr(e, "reason_code", None))
        for e in events
        if e.kind in {"approval_notified", "approval_notification_failed"}
    ]
    assert outcomes == [("ops-chat", None), ("old-chat", "webhook_refused")]
    assert kinds.index("approval_requested") < kinds.index("approval_notified")
    assert kinds.index("approval_notification_failed") < kinds.index("approval_granted")
    assert recorded.manifest.notify_channels == ("ops-chat", "old-chat")
    assert "127.0.0.1" not in recorded.manifest.model_dump_json()
