"""The worker's provider table: how it is written, what it refuses, and what the CLI offers."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from agentledger.activities.mcp import McpServerUnavailable
from agentledger.activities.models import ConfiguredProvider, ProviderClient, ProviderConfig
from agentledger.activities.redaction import REDACTED, hold, redact
from agentledger.app.config import PROVIDERS_VARIABLE, from_environment, model_providers
from agentledger.app.devserver import DevServer
from agentledger.app.errors import ConfigError
from agentledger.cli import main as cli
from agentledger.domain.workorder import WorkOrder
from bench import factories
from bench.providers import packets
from bench.providers.chat_server import ChatServer
from bench.providers.recorded import decision

ENTRY = '{"kind": "openai_compatible", "base_url": "http://127.0.0.1:8080/v1", "models": ["m"]}'


def test_providers_come_from_inline_json_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PROVIDERS_VARIABLE, f'{{"local": {ENTRY}}}')
    providers = from_environment().model_providers
    assert list(providers) == ["local"] and providers["local"].models == ("m",)


def test_providers_come_from_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "providers.toml"
    path.write_text(
        '[openai]\nbase_url = "https://api.openai.com/v1"\napi_key_env = "OPENAI_API_KEY"\n'
        'models = ["gpt-4.1-mini", "gpt-4.1"]\nmax_tokens = 512\n'
    )
    openai = model_providers(str(path))["openai"]
    assert openai.api_key_env == "OPENAI_API_KEY" and openai.max_tokens == 512


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('{"local": {"base_url": "ftp://x", "models": ["m"]}}', "base_url"),
        ('{"local": {"base_url": "http://x"}}', "models"),
        ('{"local": {"base_url": "http://x", "models": ["m"], "colour": 1}}', "colour"),
        (f'{{"playbook": {ENTRY}}}', "not a usable provider name"),
        ("{not json", "AGENTLEDGER_MODEL_PROVIDERS"),
        ("/no/such/providers.toml", "No such file"),
    ],
)
def test_a_bad_table_is_a_configuration_error_naming_the_fault(value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        model_providers(value)


def test_an_old_work_order_with_a_whole_model_profile_still_parses() -> None:
    old = factories.work_order().model_dump(mode="json") | {
        "model_override": {
            "name": "openai_compatible:gpt-4.1-mini",
            "provider": "openai_compatible",
            "model": "gpt-4.1-mini",
            "settings": {"base_url": "http://evil.example/v1", "api_key_env": "AWS_SECRET"},
            "encoding": "cl100k_base",
        }
    }
    parsed = WorkOrder.model_validate(old)
    assert parsed.model_override is not None
    assert parsed.model_override.legacy_fields() == ["name", "settings", "encoding"]


def test_a_manifest_pointing_elsewhere_is_refused_without_sending(
    chat_server: ChatServer,
) -> None:
    config = ProviderConfig(base_url=chat_server.url, models=("m",))
    provider = ConfiguredProvider("house", config, ProviderClient(environ={}))
    profile = provider.profile(None)
    moved = profile.model_copy(update={"settings": {"base_url": "http://127.0.0.1:9/v1"}})
    with pytest.raises(ApplicationError) as caught:
        provider.decide(packets.choose_next_action(), moved)
    assert caught.value.type == "ModelConfigError" and caught.value.non_retryable
    assert chat_server.requests == []


def test_held_secrets_are_scrubbed_raw_and_json_escaped() -> None:
    hold('tok/with"quote-1234', None, "")
    assert redact('a tok/with"quote-1234 b') == f"a {REDACTED} b"
    assert redact('{"t": "tok/with\\"quote-1234"}') == f'{{"t": "{REDACTED}"}}'


def test_an_mcp_error_never_quotes_a_held_token() -> None:
    hold("mcp-bearer-5f4e3d2c1b")
    error = McpServerUnavailable("server said: bad token mcp-bearer-5f4e3d2c1b")
    assert "mcp-bearer" not in error.message and REDACTED in error.message


def test_a_run_starter_cannot_name_an_endpoint_or_key_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", "support", "refund?", "--user", "usr_73", "--base-url", "http://evil/v1"]
    assert cli.main([*argv, "--api-key-env", "AWS_SECRET_ACCESS_KEY"]) != 0
    assert "the worker's" in capsys.readouterr().err


@pytest.mark.temporal
def test_the_demo_registers_its_own_workers_local_provider_from_flags(
    temporal_server: DevServer,
    tmp_path: Path,
    chat_server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTLEDGER_TASK_QUEUE", f"demo-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("DEMO_LOCAL_KEY", "sk-demo-local-key-42")
    chat_server.script(
        decision({"type": "proceed_to_answer"}),
        decision({"type": "answer", "answer": "Please tell me more."}),
    )
    flags = ["--base-url", chat_server.url, "--model-name", "tiny", "--api-key-env"]
    where = ["--data-dir", str(tmp_path), "--temporal-address", temporal_server.address]
    assert cli.main([*where, "demo", *flags, "DEMO_LOCAL_KEY"]) == 0
    assert [r.body["model"] for r in chat_server.requests] == ["tiny", "tiny"]
    assert chat_server.requests[0].headers["Authorization"] == "Bearer sk-demo-local-key-42"
