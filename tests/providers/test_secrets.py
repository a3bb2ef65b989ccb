"""No secret leaves the worker: a provider echoing its key in a 401 leaves no trace of it.

A real run on the real Temporal server chooses a provider configured on the worker; the local
chat server answers 401 with the bearer key in its body. Then everything that outlives the run
is scanned for the key: every table of the ledger, the workflow's Temporal history and the logs.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from agentledger.activities.models import ProviderConfig
from agentledger.activities.models._errors import status_error
from agentledger.activities.redaction import REDACTED, hold
from agentledger.app.devserver import DevServer
from agentledger.domain import events as ev
from agentledger.domain.workorder import ModelOverride
from bench.providers.chat_server import ECHO, ChatServer, Reply
from bench.providers.runs import configured_harness, run_choosing

SECRET = "sk-scan-7e6d5c4b3a29180f"
KEY_VAR = "SECRETS_TEST_PROVIDER_KEY"
ECHOING_401 = Reply(
    status=401,
    body={"error": {"message": f"Incorrect API key provided: {ECHO}", "code": "invalid_api_key"}},
)


def ledger_text(engine: Engine) -> str:
    """Every row of every table, as text."""
    rows: list[str] = []
    with engine.connect() as connection:
        for table in sa.inspect(connection).get_table_names():
            quoted = connection.dialect.identifier_preparer.quote(table)
            rows.extend(
                repr(tuple(r)) for r in connection.execute(sa.text(f"SELECT * FROM {quoted}"))
            )
    assert rows, "the ledger is empty: nothing was scanned"
    return "\n".join(rows)


@pytest.mark.temporal
async def test_a_key_echoed_by_a_provider_is_nowhere_in_the_ledger_history_or_logs(
    temporal_server: DevServer,
    database_url: str,
    tmp_path: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_VAR, SECRET)
    chat_server.script(ECHOING_401)
    scan = ProviderConfig(base_url=chat_server.url, api_key_env=KEY_VAR, models=("m",))
    async with configured_harness(
        temporal_server, database_url, tmp_path, {"scan": scan}
    ) as harness:
        events = await run_choosing(harness, ModelOverride(provider="scan"))
        history = await harness.client.get_workflow_handle(events[0].run_id).fetch_history()
        stored = ledger_text(harness.runtime.ledger.engine)

    # The key really went out; the 401 echoed it (the message shows where it was scrubbed).
    assert chat_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    captured = capfd.readouterr()
    logs = "\n".join(
        [caplog.text, *(str(r.__dict__) for r in caplog.records), captured.out, captured.err]
    )
    assert "Completing activity as failed" in logs  # the failure was logged, and is scanned
    for where, text in {"ledger": stored, "history": history.to_json(), "logs": logs}.items():
        assert SECRET not in text, f"the key is in the {where}"
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed) and "ModelRequestRejected" in failed.message
    assert REDACTED in failed.message and "HTTP 401" in failed.message


def test_an_excerpt_cut_at_its_limit_keeps_no_prefix_of_the_key() -> None:
    hold(SECRET)
    body = "x" * 290 + SECRET + " trailing"
    message = status_error(401, body, {}, "http://p/v1").message
    assert SECRET[:6] not in message and REDACTED in message
