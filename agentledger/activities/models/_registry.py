"""Model providers by name, and helpers to build a profile for each provider kind.

``playbook`` (the offline default) comes from the support pack; this module adds the real
providers: ``openai_compatible``, ``openai`` and ``anthropic`` for profiles a pack itself
defines, and one client per provider configured on the worker, the only ones a work order may
name. The manifest's frozen ModelProfile names the provider that decides, its protocol and the
capabilities its kind declared.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from contextlib import suppress

from pydantic import JsonValue
from temporalio.exceptions import ApplicationError

from agentledger.activities.models._capabilities import KINDS, Kind, capabilities, kind_defaults
from agentledger.activities.models._providers import ConfiguredProvider, ProviderConfig
from agentledger.activities.models._sdk import ProviderClient, load
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelClient
from agentledger.activities.redaction import hold
from agentledger.domain.manifest import ModelProfile

OPENAI_COMPATIBLE: Kind = "openai_compatible"


def model_clients(settings_like: object = None) -> dict[str, ModelClient]:
    """The real providers. ``settings_like`` may carry ``environ`` (where API keys are read)
    and ``model_providers`` (the worker's table of configured providers)."""
    environ = getattr(settings_like, "environ", None)
    source: Mapping[str, str] = environ if isinstance(environ, Mapping) else os.environ
    table: Mapping[str, ProviderConfig] = getattr(settings_like, "model_providers", None) or {}
    client = ProviderClient(environ=source)
    # Every configured key is scrubbed from error text from the start, used yet or not.
    hold(*(source.get(c.api_key_env) for c in table.values() if c.api_key_env))
    configured = {name: ConfiguredProvider(name, c, client) for name, c in table.items()}
    load(c.api for c in table.values())
    return {**dict.fromkeys(KINDS, client), **configured}


def load_sdks(profiles: Iterable[ModelProfile]) -> None:
    """Import now the SDKs that these profiles speak where they name a provider kind directly
    (a pack's profile for ``openai``, say); a profile whose settings are invalid is refused
    at its first call, as before, not here."""
    apis = []
    for profile in profiles:
        if profile.provider in KINDS:
            with suppress(ApplicationError):
                apis.append(ProviderSettings.of(profile).api)
    load(apis)


def openai_compatible_profile(
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    encoding: str = "cl100k_base",
    **settings: JsonValue,
) -> ModelProfile:
    """A profile naming the endpoint and the key's variable; validated now, not at first call."""
    return provider_profile(
        OPENAI_COMPATIBLE, base_url, model, api_key_env=api_key_env, encoding=encoding, **settings
    )


def provider_profile(
    kind: Kind,
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    encoding: str = "cl100k_base",
    **settings: JsonValue,
) -> ModelProfile:
    """A profile of any kind, its protocol and capabilities declared and frozen with it."""
    defaults: dict[str, JsonValue] = {**kind_defaults(kind)} if kind != OPENAI_COMPATIBLE else {}
    values: dict[str, JsonValue] = {**defaults, "base_url": base_url, **settings}
    if api_key_env is not None:
        values["api_key_env"] = api_key_env
    checked = ProviderConfig.model_validate({**values, "kind": kind, "models": [model]})
    return ModelProfile(
        name=f"{kind}:{model}",
        provider=kind,
        model=model,
        settings=values,
        encoding=encoding,
        capabilities=capabilities(checked),
    )
