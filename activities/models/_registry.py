"""Model providers by name, and a helper to build an ``openai_compatible`` profile.

``playbook`` (the offline default) comes from the support pack; this module adds the real
providers. A run picks one through the ``provider`` of the ModelProfile frozen in its manifest.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import JsonValue

from activities.models._client import OpenAICompatibleClient
from activities.models._settings import ProviderSettings
from activities.ports import ModelClient
from domain.manifest import ModelProfile

OPENAI_COMPATIBLE = "openai_compatible"


def model_clients(settings_like: object = None) -> dict[str, ModelClient]:
    """The real providers. ``settings_like`` may carry ``environ`` (where API keys are read)."""
    environ = getattr(settings_like, "environ", None)
    source: Mapping[str, str] = environ if isinstance(environ, Mapping) else os.environ
    return {OPENAI_COMPATIBLE: OpenAICompatibleClient(environ=source)}


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
