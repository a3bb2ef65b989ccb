"""A run chooses among the worker's configured model providers by name, and nothing else.

The endpoint and key variable of a provider are the worker's configuration. A work order naming
an unconfigured provider, a model the provider does not allow, or carrying an endpoint and key
variable of its own (as older work orders did) is refused at preparation: recorded as started
and failed ``preparation_failed``, and nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.activities.models import ProviderConfig
from agentledger.app.devserver import DevServer
from agentledger.domain import events as ev
from agentledger.domain.workorder import ModelOverride
from bench.providers.chat_server import ChatServer
from bench.providers.recorded import decision
from bench.providers.runs import configured_harness, run_choosing

pytestmark = pytest.mark.temporal

KEY_VAR = "CHOICE_TEST_PROVIDER_KEY"
OTHER_VAR = "CHOICE_TEST_SOMETHING_ELSE"


@pytest.fixture
def elsewhere() -> Iterator[ChatServer]:
    """Where a run starter would like the worker's secrets sent."""
    server = ChatServer()
    yield server
    server.close()


def _providers(server: ChatServer) -> dict[str, ProviderConfig]:
    config = ProviderConfig(
        base_url=server.url, api_key_env=KEY_VAR, models=("small", "large"), max_tokens=64
    )
    return {"house": config}


async def test_a_run_naming_a_configured_provider_uses_the_workers_endpoint_and_key(
    temporal_server: DevServer,
    tmp_path: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-house-key-0123456789")
    chat_server.script(
        decision({"type": "proceed_to_answer"}),
        decision({"type": "answer", "answer": "Please tell me more."}),
    )
    async with configured_harness(
        temporal_server, f"sqlite:///{tmp_path / 'l.db'}", tmp_path, _providers(chat_server)
    ) as harness:
        events = await run_choosing(harness, ModelOverride(provider="house", model="large"))
        manifest = harness.runtime.ledger.get_manifest(events[-1].manifest_hash)

    assert events[-1].kind == "run_completed"
    assert manifest is not None and manifest.model.provider == "house"
    assert manifest.model.model == "large"
    # The protocol and the capabilities of its kind are frozen with the choice.
    assert manifest.model.capabilities is not None
    assert manifest.model.capabilities.json_schema_output
    assert manifest.model.settings == {
        "api": "chat_completions",
        "base_url": chat_server.url,
        "api_key_env": KEY_VAR,
        "max_tokens": 64,
    }
    sent = chat_server.requests[0]
    assert sent.body["model"] == "large" and sent.body["max_tokens"] == 64
    assert sent.headers["Authorization"] == "Bearer sk-house-key-0123456789"


@pytest.mark.parametrize(
    ("choice", "refusal"),
    [
        (ModelOverride(provider="nobody"), "UnknownModelProvider"),
        (ModelOverride(provider="openai_compatible"), "UnknownModelProvider"),
        (ModelOverride(provider="playbook"), "UnknownModelProvider"),
        (ModelOverride(provider="house", model="gpt-5"), "ModelNotAllowed"),
        ("own-endpoint", "ModelOverrideRefused"),
    ],
    ids=["unconfigured", "generic-client", "playbook", "model-not-allowed", "own-endpoint"],
)
async def test_a_work_order_outside_the_configuration_is_refused_and_recorded(
    temporal_server: DevServer,
    tmp_path: Path,
    chat_server: ChatServer,
    elsewhere: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
    choice: ModelOverride | str,
    refusal: str,
) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-house-key-0123456789")
    monkeypatch.setenv(OTHER_VAR, "a-database-password")
    if choice == "own-endpoint":
        # The shape older CLIs sent: a whole profile naming an endpoint and a key variable.
        choice = ModelOverride(
            provider="house",
            model="small",
            name="house:small",
            settings={"base_url": elsewhere.url, "api_key_env": OTHER_VAR},
            encoding="cl100k_base",
        )
    assert isinstance(choice, ModelOverride)
    async with configured_harness(
        temporal_server, f"sqlite:///{tmp_path / 'l.db'}", tmp_path, _providers(chat_server)
    ) as harness:
        events = await run_choosing(harness, choice)

    assert [e.kind for e in events] == ["run_started", "run_failed"]
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed) and failed.reason_code == "preparation_failed"
    assert failed.message.startswith(f"{refusal}: ")
    assert chat_server.requests == [] and elsewhere.requests == []
