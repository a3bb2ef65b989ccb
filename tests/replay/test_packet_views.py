"""Every view of a packet shows exactly what the model was sent: for each checked-in history,
each model step's packet is rebuilt (its recorded hash checked, as ``test_replay`` does), stored
in a ledger as the model step stores it, and read back through the API's view. The view's text
must be, byte for byte, what ``render_parts`` writes and what a chat provider posts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from markupsafe import escape

from agentledger.activities.ledger import Ledger
from agentledger.activities.models import ProviderClient, openai_compatible_profile
from agentledger.api import views
from agentledger.api.routes.ui import templates
from agentledger.domain.context import ContextPacket
from agentledger.domain.context.render import state_text
from agentledger.domain.manifest import ExecutionManifest
from bench.providers.recorded import openai_completion
from tests.replay._formats import RECORDED_FORMAT, v1_body
from tests.replay._stored import (
    HISTORIES,
    Sent,
    history,
    recorded_packets,
    store_packet,
    what_render_parts_sent,
)

ANSWER = {"type": "proceed_to_answer", "rationale": "known"}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    yield opened
    opened.close()


def stored(ledger: Ledger, sent: Sent) -> dict[str, Any]:
    """The packet as the model step stores it, read back through the API's view."""
    store_packet(ledger, sent)
    return views.packet_view(ledger, [sent.event], sent.packet.packet_hash, "restricted")


def posted_messages(packet: ContextPacket, manifest: ExecutionManifest) -> list[Any]:
    """The messages the chat-completions client posts for this packet under this manifest."""
    bodies: list[dict[str, Any]] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=openai_completion(content=json.dumps(ANSWER)))

    client = ProviderClient(environ={}, transport=httpx2.MockTransport(reply))
    client.decide(packet, manifest.model)
    return list(bodies[-1]["messages"])


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
def test_the_packet_view_shows_every_recorded_packet_exactly_as_render_parts_wrote_it(
    path: Path, ledger: Ledger
) -> None:
    checked = 0
    for sent in recorded_packets(path):
        shown = stored(ledger, sent)
        exact = what_render_parts_sent(sent.packet)
        pieces = [s["text"] for s in shown["sections"]]
        assert shown["fixed_text"] + "".join(pieces) + shown.get("conflicts_text", "") == exact
        assert shown["text"] == exact
        checked += 1
    assert checked, f"{path.stem}: no packet to check"


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
@pytest.mark.parametrize("native_tools", [True, False], ids=["native_tools", "text_tools"])
def test_a_chat_models_packet_view_shows_the_messages_its_provider_posted(
    path: Path, native_tools: bool, ledger: Ledger
) -> None:
    chat = openai_compatible_profile("http://model.test/v1", "m", native_tools=native_tools)
    for recorded in recorded_packets(path):
        manifest = recorded.manifest.model_copy(update={"model": chat})
        event = recorded.event.model_copy(update={"manifest_hash": manifest.hash})
        shown = stored(ledger, Sent(recorded.packet, event, manifest))
        posted = posted_messages(recorded.packet, manifest)
        assert shown["messages"] == posted
        page = _ui_page("packet.html", packet=shown)
        assert all(escape(m["content"]) in page for m in posted)


def test_a_packet_diff_shows_a_changed_working_state_block_as_changed(ledger: Ledger) -> None:
    """Same items, another state: the diff compares what was sent, not only item ids."""
    first = next(
        s
        for s in recorded_packets(history("refund_approved_v9"))
        if any(section.name == "working_state" for section in s.packet.sections)
    )
    budget = {"steps_remaining": 1, "tokens_remaining": 2, "tool_calls_remaining": 3}
    state = {**first.packet.working_state, "remaining_budget": budget}
    changed = first.packet.model_copy(update={"working_state": state})
    later = changed.model_copy(update={"packet_hash": changed.compute_hash()})
    event = first.event.model_copy(update={"seq": 99, "packet_hash": later.packet_hash})
    diff = views.packet_diff(
        stored(ledger, first), stored(ledger, Sent(later, event, first.manifest))
    )
    section = next(s for s in diff["sections"] if s["name"] == "working_state")
    assert section["changed"] == ["working_state"]
    assert section["added"] == section["removed"] == []
    assert any(line.startswith("+") and '"steps_remaining":1' in line for line in diff["text"])


def _ui_page(name: str, **values: Any) -> str:
    """One of the UI's pages rendered as the route renders it, from the same view dict."""
    return str(templates.get_template(name).render(caller=None, csrf="", run_id="run", **values))


@pytest.mark.parametrize("name", ["refund_approved_v9", "conversation_v9", "handoff_v1"])
def test_the_ui_packet_page_shows_the_exact_text_sent_blocks_included(
    name: str, ledger: Ledger
) -> None:
    for sent in recorded_packets(history(name)):
        page = _ui_page("packet.html", packet=stored(ledger, sent))
        assert escape(what_render_parts_sent(sent.packet)) in page
        assert escape(state_text(sent.packet.working_state)) in page


def test_the_ui_diff_page_names_a_changed_state_block_and_its_changed_lines(
    ledger: Ledger,
) -> None:
    first, second = list(recorded_packets(history("refund_approved_v9")))[:2]
    diff = views.packet_diff(stored(ledger, first), stored(ledger, second))
    page = _ui_page("diff.html", diff=diff)
    row = next(r for r in page.split("<tr>") if r.startswith("<td>working_state</td>"))
    assert "working_state" in row.split("<td>")[-1]
    assert escape("+" + state_text(second.packet.working_state).splitlines()[1]) in page


@pytest.mark.parametrize("name", sorted(RECORDED_FORMAT), ids=str)
def test_a_packet_stored_in_format_1_is_shown_with_the_blocks_format_1_wrote(
    name: str, ledger: Ledger
) -> None:
    """Packets stored before formats were versioned wrote the working state as bare JSON after
    a label; their recorded hashes are rebuilt only from that text's token counts (_formats)."""
    for sent in recorded_packets(history(name)):
        assert sent.packet.packet_format == 1
        shown = stored(ledger, sent)
        block = f"WORKING_STATE {v1_body(sent.packet.working_state)}\n"
        assert block in shown["text"] and '<data id="working_state"' not in shown["text"]
        assert shown["text"] == what_render_parts_sent(sent.packet)
