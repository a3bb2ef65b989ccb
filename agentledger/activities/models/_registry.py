"""Model providers by name, and a helper to build an ``openai_compatible`` profile.

``playbook`` (the offline default) comes from the support pack; this module adds the real
providers: ``openai_compatible`` for profiles a pack itself defines, and one client per provider
configured on the worker, the only ones a work order may name. The manifest's frozen
ModelProfile names the provider that decides.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import JsonValue

from agentledger.activities.models._client import OpenAICompatibleClient
from agentledger.activities.models._providers import ConfiguredProvider, ProviderConfig
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelClient
from agentledger.activities.redaction import hold
from agentledger.domain.manifest import ModelProfile

OPENAI_COMPATIBLE = "openai_compatible"


def model_clients(settings_like: object = None) -> dict[str, ModelClient]:
    """The real providers. ``settings_like`` may carry ``environ`` (where API keys are read)
    and ``model_providers`` (the worker's table of configured providers)."""
    environ = getattr(settings_like, "environ", None)
    source: Mapping[str, str] = environ if isinstance(environ, Mapping) else os.environ
    table: Mapping[str, ProviderConfig] = getattr(settings_like, "model_providers", None) or {}
    client = OpenAICompatibleClient(environ=source)
    # Every configured key is scrubbed from error text from the start, used yet or not.
    hold(*(source.get(c.api_key_env) for c in table.values() if c.api_key_env))
    configured = {name: ConfiguredProvider(name, c, client) for name, c in table.items()}
    return {OPENAI_COMPATIBLE: client, **configured}


def openai_compatible_profile(
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    encoding: str = "cl100k_base",
    **settings: JsonValue,
) -> ModelProfile:
    """A profile naming the endpoint and the key's variable; validated now, not at first call."""
    values: dict[str, JsonValue] = {"base_url": base_url, **settings}
    if api_key_env is not None:
        values["api_key_env"] = api_key_env
    ProviderSettings.model_validate(values)
    return ModelProfile(
        name=f"{OPENAI_COMPATIBLE}:{model}",
        provider=OPENAI_COMPATIBLE,
        model=model,
        settings=values,
        encoding=encoding,
    )
