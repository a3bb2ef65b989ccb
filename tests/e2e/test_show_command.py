"""`agentledger show` over a ledger holding recorded runs (no server needed): the exact text of
every packet, packets in JSON, a readable run list, and a quiet exit when the reader goes away."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from agentledger.activities.ledger import Ledger
from agentledger.activities.models import ProviderSettings, messages, openai_compatible_profile
from agentledger.app import packet_views
from agentledger.app.render import packet_text
from agentledger.cli.main import main
from agentledger.domain import events as ev
from tests.e2e.test_cli import embedded_ledger
from tests.replay._recorded import read_history
from tests.replay._stored import (
    Sent,
    history,
    recorded_packets,
    store_run,
    what_render_parts_sent,
)

LONG_REQUEST = "Where is my refund?\n" + "It has been weeks and I still wait. " * 20


def _waiting_with_a_long_request(ledger: Ledger) -> str:
    """The conversation run as it stood when it first asked its customer something, its
    request made long and multi-line."""
    events = sorted(read_history(history("conversation_v9")).events.values(), key=lambda e: e.seq)
    head = events[0]
    assert isinstance(head, ev.RunStarted)
    order = head.work_order.model_copy(update={"request_text": LONG_REQUEST})
    asked = next(e.seq for e in events if isinstance(e, ev.ReplyAwaited))
    ledger.append([head.model_copy(update={"work_order": order}), *events[1:asked]])
    return head.run_id


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("show")
    ledger = embedded_ledger(where)
    store_run(ledger, history("refund_approved_v9"))
    _waiting_with_a_long_request(ledger)
    ledger.close()
    return where


@pytest.fixture(scope="module")
def refund() -> list[Sent]:
    """The refund run's packets, as the data directory holds them."""
    return list(recorded_packets(history("refund_approved_v9")))


def show(data_dir: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["--data-dir", str(data_dir), "show", *args]) == 0
    return capsys.readouterr().out


def test_show_packets_prints_each_packet_exactly_as_the_model_step_rendered_it(
    data_dir: Path, refund: list[Sent], capsys: pytest.CaptureFixture[str]
) -> None:
    printed = show(data_dir, capsys, refund[0].event.run_id, "--packets")
    assert len(refund) == 5
    for sent in refund:
        assert what_render_parts_sent(sent.packet) in printed


def test_show_json_packets_gives_one_packet_a_line_with_its_exact_text(
    data_dir: Path, refund: list[Sent], capsys: pytest.CaptureFixture[str]
) -> None:
    lines = show(data_dir, capsys, refund[0].event.run_id, "--json", "--packets").splitlines()
    shown = [json.loads(line) for line in lines]
    assert [p["packet_hash"] for p in shown] == [s.packet.packet_hash for s in refund]
    assert [p["text"] for p in shown] == [what_render_parts_sent(s.packet) for s in refund]


def test_show_list_has_a_header_the_time_the_pack_and_one_line_per_run(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, *rows = show(data_dir, capsys, "--list").splitlines()
    assert header.split() == ["RUN", "STATUS", "UPDATED", "PACK", "USER", "REQUEST"]
    assert len(rows) == 2
    waiting = next(r for r in rows if "Where is my refund?" in r)
    assert waiting.split()[1] == "waiting"
    assert "support" in next(r for r in rows if r is not waiting).split()
    assert waiting.endswith("…") and len(waiting) <= 160
    assert waiting.split()[2].count("-") == 2  # the date, then the time


def test_show_list_limit_lists_only_the_most_recent_runs(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, *rows = show(data_dir, capsys, "--list", "--limit", "1").splitlines()
    assert header.startswith("RUN") and len(rows) == 1


def test_show_list_into_a_closed_pipe_ends_quietly(data_dir: Path) -> None:
    """As in `agentledger show --list | head -1`: the reader leaves before the list is written."""
    command = [sys.executable, "-m", "agentledger.cli", "--data-dir", str(data_dir), "show"]
    child = subprocess.Popen([*command, "--list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    errors = child.stderr.read().decode()
    assert child.wait(timeout=60) in (0, 141)
    assert errors == ""


def test_on_a_terminal_control_characters_in_a_packet_are_shown_not_obeyed(
    refund: list[Sent],
) -> None:
    """Tool output may carry terminal escapes; piped, the text stays exact."""
    packet = refund[0].packet
    first = packet.sections[0]
    hostile = first.items[0].model_copy(update={"content": "\x1b[2Jcleared\x07"})
    sections = (
        first.model_copy(update={"items": (hostile, *first.items[1:])}),
        *packet.sections[1:],
    )
    body = packet.model_copy(update={"sections": sections}).model_dump(mode="json")
    view = packet_views.packet_view(body, None, "restricted")
    assert "\x1b[2Jcleared\x07" in packet_text(view)
    shown = packet_text(view, visible_controls=True)
    assert "\\x1b[2Jcleared\\x07" in shown and "\x1b" not in shown and "\x07" not in shown


def test_show_packets_of_a_chat_models_run_prints_the_messages_as_posted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = openai_compatible_profile("http://model.test/v1", "m")
    with closing(Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}")) as ledger:
        sent = store_run(ledger, history("refund_approved_v9"), model=chat)
    printed = show(tmp_path, capsys, sent[0].event.run_id, "--packets")
    settings = ProviderSettings.of(chat)
    for one in sent:
        for message in messages(one.packet, settings):
            assert isinstance(message, dict)
            assert f"--- {message['role']} message, as posted to openai_compatible ---\n" in printed
            assert f"{message['content']}\n" in printed
