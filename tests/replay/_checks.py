"""Compare what a history recorded with what the current code derives from it.

Each check returns its problems as sentences naming the history, the event seq or model step and
both values, so a failing test says exactly what no longer matches; an empty list means all do.
"""

from __future__ import annotations

from typing import Any

from agentledger.activities.messages import PacketSummary
from agentledger.activities.packets import build_step_packet
from agentledger.app.registry import get_pack
from agentledger.domain.compaction import context_state
from agentledger.domain.context import ContextPacket, InsufficientContext
from agentledger.domain.context.tokens import counter_for_encoding
from agentledger.domain.errors import FoldError
from agentledger.domain.events import RunEvent
from agentledger.domain.fold import project, state_hash
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.state import WorkingState
from tests.replay._formats import in_format, recorded_format
from tests.replay._recorded import Memories, ModelStep, RecordedRun
from tests.replay._replayed import ReplayedRun

_SHOWN = 160  # characters of a differing value shown in a message


def event_mismatches(recorded: RecordedRun, replayed: ReplayedRun) -> list[str]:
    """The replay must send exactly the recorded events, event for event."""
    name = recorded.name
    problems = [
        f"{name}: event #{a.seq} was recorded twice with different content: {_diff(a, b)}"
        for a, b in recorded.resent_differently
    ]
    emitted: dict[int, RunEvent] = {}
    for event in replayed.events:
        first = emitted.setdefault(event.seq, event)
        if first != event:
            problems.append(f"{name}: the replay sent event #{event.seq} twice, differently")
    for seq in sorted(recorded.events.keys() | emitted.keys()):
        was, now = recorded.events.get(seq), emitted.get(seq)
        if now is None:
            assert was is not None
            problems.append(f"{name}: event #{seq} {was.kind} is recorded, never replayed")
        elif was is None:
            problems.append(f"{name}: the replay emitted event #{seq} {now.kind}, not recorded")
        elif _json(was) != _json(now):
            problems.append(f"{name}: event #{seq} {was.kind}: {_diff(was, now)}")
    return problems + _local_flush_mismatches(recorded, replayed)


def _local_flush_mismatches(recorded: RecordedRun, replayed: ReplayedRun) -> list[str]:
    """Old runs flushed some events through local activities; history keeps only their count."""
    name, counts = recorded.name, recorded.local_flushes
    sent = [len(batch) for batch in replayed.local_flushes]
    if sent != counts:
        return [f"{name}: local-activity flushes appended {counts} events, replay sends {sent}"]
    return [
        f"{name}: event #{e.seq} rides on a local flush and on a recorded activity"
        for batch in replayed.local_flushes
        for e in batch
        if e.seq in recorded.events
    ]


def step_input_mismatches(recorded: RecordedRun, replayed: ReplayedRun) -> list[str]:
    """Each model step is sent exactly what it was sent when recorded (its state above all):
    the replayer does not compare activity inputs, so a change there is otherwise silent."""
    name = recorded.name
    was = [s.input for s in sorted(recorded.model_steps.values(), key=lambda s: s.event_id)]
    now = replayed.model_step_inputs
    if len(was) != len(now):
        return [f"{name}: {len(was)} model steps recorded, {len(now)} replayed"]
    problems = []
    for i, (a, b) in enumerate(zip(was, now, strict=True)):
        for field in type(a).model_fields:
            if getattr(a, field) != getattr(b, field):
                shown = (repr(getattr(x, field))[:_SHOWN] for x in (a, b))
                problems.append(f"{name}: model step {i} ({a.step}) {field}: " + " -> ".join(shown))
    return problems


def recorded_log(recorded: RecordedRun, replayed: ReplayedRun) -> list[RunEvent]:
    """The recorded events in seq order, plus those of local flushes (whose count matched)."""
    flushed = [e for batch in replayed.local_flushes for e in batch]
    return sorted([*recorded.events.values(), *flushed], key=lambda e: e.seq)


def projection_mismatches(recorded: RecordedRun, replayed: ReplayedRun) -> list[str]:
    """project(recorded events) is the replayed state, and the state carried on, if any."""
    name, carried = recorded.name, recorded.started.continued
    if carried is not None and state_hash(carried.state) != carried.state_hash:
        return [
            f"{name}: the carried-in state hashes to {state_hash(carried.state)}, "
            f"its Continuation.state_hash says {carried.state_hash}"
        ]
    try:
        projected = project(recorded_log(recorded, replayed), carried.state if carried else None)
    except FoldError as exc:
        return [f"{name}: the recorded events do not fold: {exc}"]
    assert replayed.final_state is not None, f"{name}: the replay never ran the workflow"
    was, now = recorded.continued_as_new, replayed.continued_as_new
    if (was is None) != (now is None):
        return [
            f"{name}: continued as new when recorded: {was is not None}, "
            f"when replayed: {now is not None}"
        ]
    hashes = {
        "state_hash(project(recorded events))": state_hash(projected),
        "state_hash(replayed workflow state)": state_hash(replayed.final_state),
    }
    if was is not None and now is not None:
        hashes["recorded Continuation.state_hash"] = was.state_hash
        hashes["state_hash(recorded Continuation.state)"] = state_hash(was.state)
        hashes["replayed Continuation.state_hash"] = now.state_hash
    if len(set(hashes.values())) == 1:
        return []
    fields = _differing(projected, replayed.final_state)
    return [
        f"{name}: {_listed(hashes)}" + (f"; differing state fields: {fields}" if fields else "")
    ]


def packet_mismatches(
    recorded: RecordedRun, replayed: ReplayedRun, memories: Memories
) -> list[str]:
    """Every recorded packet hash is recomputed from the step's recorded input and manifest,
    and that input's state is the projection of the recorded events up to the step."""
    name, manifest = recorded.name, recorded.manifest
    problems: list[str] = []
    assert manifest is not None, f"{name}: no manifest recorded"
    log = recorded_log(recorded, replayed)
    carried = recorded.started.continued
    state = carried.state if carried else WorkingState()
    checked = 0
    for step in sorted(recorded.model_steps.values(), key=lambda s: s.event_id):
        sent, at = step.input.state, f"{name}: model_step #{step.event_id} ({step.input.step})"
        try:
            state = project([e for e in log if state.last_seq < e.seq <= sent.last_seq], state)
        except FoldError as exc:
            return [*problems, f"{at}: the recorded events before it do not fold: {exc}"]
        if (projected := state_hash(context_state(state))) != state_hash(sent):
            problems.append(
                f"{at} was sent a state hashing to {state_hash(sent)}; the recorded events "
                f"through #{sent.last_seq} project (trimmed for the step) to {projected}"
            )
        if step.input.manifest_hash != manifest.hash:
            problems.append(f"{at} ran under {step.input.manifest_hash}, not {manifest.hash}")
        elif step.result is not None:
            problems += _packet_mismatch(at, step, manifest, memories, recorded_format(name))
            checked += 1
    return problems or ([] if checked else [f"{name}: no completed model_step to check"])


def _packet_mismatch(
    at: str, step: ModelStep, manifest: ExecutionManifest, memories: Memories, version: int
) -> list[str]:
    given, result = step.input, step.result
    assert result is not None
    try:
        packet = rebuilt_packet(step, manifest, memories, version)
    except InsufficientContext as refusal:
        if result.insufficient_context is None:
            return [f"{at}: recorded a packet, the recomputation refuses: {refusal}"]
        return []
    if result.packet is None:
        return [f"{at}: recorded no packet ({result.insufficient_context}), one builds now"]
    if packet.packet_hash == result.packet.packet_hash:
        return []
    return [
        f"{at} after event #{given.state.last_seq}: recorded packet_hash "
        f"{result.packet.packet_hash}, recomputed {packet.packet_hash} (packet format {version}); "
        f"differing summary fields: {_summary_diff(result.packet, packet)}"
    ]


def rebuilt_packet(
    step: ModelStep, manifest: ExecutionManifest, memories: Memories, version: int
) -> ContextPacket:
    """The packet the current builder makes from a recorded step's input, written in the packet
    format the history was recorded with; raises ``InsufficientContext`` as the builder does."""
    given = step.input
    assert given.state.work_order is not None
    pack = get_pack(given.state.work_order.pack)
    packet = build_step_packet(
        pack, manifest, given.step, given.state, given.now, memories(given.now)
    )
    return in_format(packet, version, counter_for_encoding(manifest.model.encoding))


def _summary_diff(was: PacketSummary, packet: ContextPacket) -> str:
    now = {
        "cache_key": packet.cache_key,
        "section_tokens": packet.section_tokens,
        "total_tokens": packet.total_tokens,
        "omission_count": len(packet.omissions),
        "included_ids": packet.included_ids,
    }
    fields = [f"{k} {getattr(was, k)!r} -> {v!r}" for k, v in now.items() if getattr(was, k) != v]
    return "; ".join(fields) or "none (an item's content or timestamp)"


def _json(event: RunEvent) -> dict[str, Any]:
    return event.model_dump(mode="json")


def _diff(was: RunEvent, now: RunEvent) -> str:
    a, b = _json(was), _json(now)
    return "; ".join(
        f"{k}: recorded {_short(a.get(k))}, replayed {_short(b.get(k))}"
        for k in sorted(a.keys() | b.keys())
        if a.get(k) != b.get(k)
    )


def _differing(a: WorkingState, b: WorkingState) -> list[str]:
    x, y = a.model_dump(mode="json"), b.model_dump(mode="json")
    return sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))


def _listed(hashes: dict[str, str]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in hashes.items())


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
