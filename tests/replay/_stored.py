"""The packets of a checked-in history as the ledger would hold them: each model step's packet
rebuilt from its recorded input (its recorded hash checked, as ``test_replay`` does) and stored
with the run's events, so the views can be read over real recorded runs without a server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bench._chat_pack  # noqa: F401  (registers the conversation history's pack)
from agentledger.activities.ledger import Ledger
from agentledger.activities.messages import ModelStepInput
from agentledger.domain import events as ev
from agentledger.domain.context import ContextPacket
from agentledger.domain.context.render import render_fixed, render_parts
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.model_profile import ModelProfile
from tests.replay._checks import rebuilt_packet
from tests.replay._formats import recorded_format
from tests.replay._recorded import read_history, recorded_memories, register_loop_packs

HISTORIES = sorted(Path(__file__).with_name("histories").glob("*.json"))


@dataclass(frozen=True)
class Sent:
    """A rebuilt packet of a recorded run, its ContextPacketBuilt event and the run's manifest."""

    packet: ContextPacket
    event: ev.ContextPacketBuilt
    manifest: ExecutionManifest


def history(name: str) -> Path:
    return Path(__file__).with_name("histories") / f"{name}.json"


def recorded_packets(path: Path) -> Iterator[Sent]:
    register_loop_packs()
    recorded = read_history(path)
    manifest, memories = recorded.manifest, recorded_memories(recorded)
    assert manifest is not None, f"{path.stem}: no manifest recorded"
    built = {
        e.packet_hash: e for e in recorded.events.values() if isinstance(e, ev.ContextPacketBuilt)
    }
    for step in sorted(recorded.model_steps.values(), key=lambda s: s.event_id):
        if step.result is None or step.result.packet is None:
            continue
        packet = rebuilt_packet(step, manifest, memories, recorded_format(path.stem))
        assert packet.packet_hash == step.result.packet.packet_hash, f"{path.stem}: rebuilt"
        event = built.get(packet.packet_hash) or _event_of(packet, step.input)
        yield Sent(packet, event.model_copy(update={"manifest_hash": manifest.hash}), manifest)


def _event_of(packet: ContextPacket, given: ModelStepInput) -> ev.ContextPacketBuilt:
    """The event a step recorded through a local flush, whose inputs history does not keep."""
    return ev.ContextPacketBuilt(
        run_id=given.run_id,
        seq=given.state.last_seq + 1,
        recorded_at=given.now,
        manifest_hash="",
        step=packet.step,
        packet_hash=packet.packet_hash,
        cache_key=packet.cache_key,
        section_tokens=packet.section_tokens,
        total_tokens=packet.total_tokens,
        omission_count=len(packet.omissions),
        included_ids=packet.included_ids,
    )


def store_packet(ledger: Ledger, sent: Sent) -> None:
    """The packet and its manifest, stored as the model step and run preparation store them."""
    ledger.put_manifest(sent.manifest)
    body = sent.packet.model_dump(mode="json")
    ledger.put_packet(sent.packet.packet_hash, sent.event.run_id, sent.packet.step, body)


def store_run(
    ledger: Ledger, path: Path, through_seq: int | None = None, model: ModelProfile | None = None
) -> list[Sent]:
    """A recorded run's events (through ``through_seq``) and the packets they name, stored;
    with ``model``, as if its manifest had frozen that model profile instead."""
    events = sorted(read_history(path).events.values(), key=lambda e: e.seq)
    kept = [e for e in events if through_seq is None or e.seq <= through_seq]
    sent = [s for s in recorded_packets(path) if s.event.seq <= kept[-1].seq]
    if model is not None:
        manifest = sent[0].manifest.model_copy(update={"model": model})
        sent = [
            Sent(s.packet, s.event.model_copy(update={"manifest_hash": manifest.hash}), manifest)
            for s in sent
        ]
    manifest_hash = sent[0].manifest.hash
    ledger.append([e.model_copy(update={"manifest_hash": manifest_hash}) for e in kept])
    for one in sent:
        store_packet(ledger, one)
    return sent


def what_render_parts_sent(packet: ContextPacket) -> str:
    """The packet's text as the model step renders it: its fixed prefix and every part."""
    return render_fixed(packet) + "".join(text for _, text in render_parts(packet))
