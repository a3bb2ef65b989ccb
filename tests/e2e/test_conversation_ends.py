"""How a conversation's end reads in the CLI: a reply to a run that has ended says it ended (not
"no run"), and when it closed with its question unanswered, says so with the closing message."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from agentledger.devserver import DevServer
from agentledger.domain.graph import ConversationPolicy
from bench._chat_pack import CUSTOMER, IDLE_SECONDS, QUESTION
from tests.e2e._worker import cli_worker
from tests.e2e.test_cli import cli

pytestmark = pytest.mark.temporal

CLOSING = ConversationPolicy.model_fields["closing_message"].default
"""The chat pack's closing message (the policy's default)."""


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
