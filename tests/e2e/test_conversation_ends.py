"""How a conversation's end reads in the CLI: a reply to a run that has ended says it ended (not
"no run"), and when it closed with its question unanswered, says so with the closing message."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pytest

from agentledger.app.devserver import DevServer
from agentledger.domain.graph import ConversationPolicy
from bench._chat_pack import CUSTOMER, IDLE_SECONDS, QUESTION
from tests.e2e._worker import cli_worker
from tests.e2e.test_cli import cli

pytestmark = pytest.mark.temporal

CLOSING = ConversationPolicy.model_fields["closing_message"].default
"""The chat pack's closing message (the policy's default)."""
NOW = datetime(2026, 12, 4, tzinfo=UTC)


@pytest.fixture
def env(temporal_server: DevServer, tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return {
        **environ,
        "AGENTLEDGER_TEMPORAL_ADDRESS": temporal_server.address,
        "AGENTLEDGER_DATA_DIR": str(tmp_path),
        "AGENTLEDGER_TASK_QUEUE": f"ends-{uuid.uuid4().hex[:8]}",
        "AGENTLEDGER_PACKS": "chat=bench._chat_pack:CHAT",
    }


def test_a_reply_to_a_conversation_closed_unanswered_says_it_ended_and_how(
    env: dict[str, str],
) -> None:
    user = CUSTOMER.user_id
    with cli_worker(env):
        asked = cli(env, "run", "chat", "I'd like to pick a colour", "--user", user, "--wait")
        assert asked.returncode == 0 and QUESTION in asked.stdout, (asked.stdout, asked.stderr)
        run_id = asked.stdout.split()[0]
        time.sleep(IDLE_SECONDS + 4)  # nobody answers: the idle timer closes the conversation

        late = cli(env, "reply", run_id, "red, please", "--as", user, "--wait")
    assert late.returncode == 5, (late.stdout, late.stderr)
    assert f"run {run_id} has ended" in late.stderr and "no run" not in late.stderr
    assert "closed" in late.stderr and "unanswered" in late.stderr, late.stderr
    assert QUESTION in late.stderr
    assert CLOSING in late.stderr


def test_reply_follow_prints_the_answer_then_what_the_run_waits_on(env: dict[str, str]) -> None:
    user = CUSTOMER.user_id
    with cli_worker(env):
        asked = cli(env, "run", "chat", "I'd like to pick a colour", "--user", user, "--follow")
        assert asked.returncode == 0 and QUESTION in asked.stdout, (asked.stdout, asked.stderr)
        run_id = asked.stdout.split()[0]
        followed = cli(env, "reply", run_id, "red, please", "--as", user, "--follow")
    assert followed.returncode == 0, (followed.stdout, followed.stderr)
    lines = followed.stdout.splitlines()
    # The taken line, the answer as the stream wrote it, then the report of the recorded one.
    assert lines[1] == "You chose red.", lines
    assert lines[2] == "answered; awaiting a follow-up: You chose red.", lines


def test_how_a_conversation_closed_reads_after_a_question_and_after_an_answer() -> None:
    from agentledger.domain import events as ev
    from agentledger.domain.conversation import closed, ended

    def asked(reason: Literal["question", "follow_up"], message: str) -> ev.ReplyAwaited:
        return ev.ReplyAwaited(
            run_id="run_x",
            seq=1,
            recorded_at=NOW,
            manifest_hash="m",
            reason=reason,
            step="s",
            message=message,
            deadline=NOW,
        )

    close = ev.ConversationClosed(
        run_id="run_x",
        seq=2,
        recorded_at=NOW,
        manifest_hash="m",
        reason="max_turns",
        message="Bye for now.",
    )
    unanswered = closed([asked("question", QUESTION), close])
    assert unanswered is not None and "question unanswered" in unanswered
    assert QUESTION in unanswered and '"Bye for now."' in unanswered and "max turns" in unanswered
    answered = closed([asked("follow_up", "You chose red."), close])
    assert answered is not None and "after its last answer" in answered
    assert "unanswered" not in answered and "Bye for now." in answered
    assert closed([asked("question", QUESTION)]) is None
    assert ended([], "run_x", "completed") == (
        "run run_x has ended (completed); it takes no replies; start a new one with "
        "`agentledger run`"
    )
