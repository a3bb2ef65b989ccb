"""Model providers configured on the worker: the only destinations a run may choose.

Whoever starts a run names a provider and, optionally, one of its models; the endpoint, the
variable holding the key and the generation settings come from this worker's configuration
(``AGENTLEDGER_MODEL_PROVIDERS``), never from the work order. Otherwise a run starter could have
the worker send any variable's value as a bearer token to any URL.

A configured entry may take a kind's name (``openai``, ``anthropic``): it then governs the
profiles a pack defines under that name, refusing any whose destination differs from its own.

Refusals at preparation are final::

    ApplicationError
     ├── UnknownModelProvider   the name is not configured on this worker
     ├── ModelNotAllowed        the provider does not allow that model name
     └── ModelOverrideRefused   the work order carries its own endpoint or settings
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import Field, JsonValue, ValidationError, model_validator
from temporalio.exceptions import ApplicationError

from agentledger.activities.models._capabilities import (
    APIS,
    KINDS,
    Kind,
    capabilities,
    kind_defaults,
)
from agentledger.activities.models._errors import config_error
from agentledger.activities.models._sdk import ProviderClient
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelClient, ModelReply, ReplyDeltas
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.workorder import ModelOverride

RESERVED = frozenset({"playbook", "openai_compatible"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_OWN = ("kind", "models", "encoding", "max_concurrency")
_DESTINATION = ("api", "base_url", "api_key_env", "api_key_header")


class ProviderConfig(ProviderSettings):
    """One entry of the worker's table: ``ProviderSettings`` plus the models it allows."""

    kind: Kind = "openai_compatible"
    models: tuple[str, ...] = Field(min_length=1)
    encoding: str = "cl100k_base"
    max_concurrency: int | None = Field(default=None, gt=0)
    """Calls this worker makes to the provider at once (``None``: no limit). A call beyond it
    waits for a slot, heartbeating, up to ``timeout_seconds``; then it fails retryably as
    ``ModelOverloaded``, which a fallback chain may move down. The worker's, never frozen."""

    @model_validator(mode="before")
    @classmethod
    def _kind_defaults(cls, data: Any) -> Any:
        """The kind's protocol and decision form, set (so frozen) unless configured."""
        if not isinstance(data, dict):
            return data
        kind = data.get("kind", "openai_compatible")
        if kind not in KINDS:
            return data  # the Literal names the kinds there are
        return {**kind_defaults(kind), **data}

    @model_validator(mode="after")
    def _api_of_kind(self) -> ProviderConfig:
        if self.api not in APIS[self.kind]:
            raise ValueError(f"a {self.kind} provider speaks {' or '.join(APIS[self.kind])}")
        return self

    def settings(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json", exclude=set(_OWN), exclude_unset=True)


def providers_from(table: object) -> dict[str, ProviderConfig]:
    """The table ``{name: {kind, base_url, api_key_env, models, ...}}`` (parsed JSON or TOML);
    ValueError names the entry and the field at fault."""
    if not isinstance(table, dict):
        raise ValueError("expected an object mapping provider names to their settings")
    providers: dict[str, ProviderConfig] = {}
    for name, entry in table.items():
        if not _NAME.match(name) or name in RESERVED:
            raise ValueError(f"{name!r} is not a usable provider name")
        try:
            providers[name] = ProviderConfig.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"provider {name!r}: {where}: {first['msg']}") from None
    return providers


class ConfiguredProvider:
    """A ``ModelClient`` bound to one configured entry; it sends only where that entry says."""

    def __init__(self, name: str, config: ProviderConfig, client: ProviderClient) -> None:
        self.name = name
        self.config = config
        self._client = client
        limit = config.max_concurrency
        self._slots = threading.BoundedSemaphore(limit) if limit is not None else None

    def profile(self, model: str | None) -> ModelProfile:
        chosen = model or self.config.models[0]
        if chosen not in self.config.models:
            raise ApplicationError(
                f"model provider {self.name!r} does not allow model {chosen!r} "
                f"(allowed: {', '.join(self.config.models)})",
                type="ModelNotAllowed",
                non_retryable=True,
            )
        return ModelProfile(
            name=f"{self.name}:{chosen}",
            provider=self.name,
            model=chosen,
            settings=self.config.settings(),
            encoding=self.config.encoding,
            capabilities=capabilities(self.config),
        )

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        self._check(profile)
        with self._slot():
            return self._client.decide(packet, profile)

    def decide_streaming(
        self, packet: ContextPacket, profile: ModelProfile, tap: ReplyDeltas
    ) -> ModelReply:
        self._check(profile)
        with self._slot():
            return self._client.decide_streaming(packet, profile, tap)

    @contextmanager
    def _slot(self) -> Iterator[None]:
        """One of the provider's ``max_concurrency`` slots on this worker, for one call."""
        if self._slots is None:
            yield
            return
        if not self._slots.acquire(timeout=self.config.timeout_seconds):
            raise ApplicationError(
                f"model provider {self.name!r}: all {self.config.max_concurrency} of this "
                f"worker's slots stayed busy for {self.config.timeout_seconds:g} s",
                type="ModelOverloaded",
            )
        try:
            yield
        finally:
            self._slots.release()

    def _check(self, profile: ModelProfile) -> None:
        # A manifest frozen under an older configuration may point elsewhere: refuse, never
        # follow it, since this worker no longer vouches for that endpoint or key variable.
        sent = ProviderSettings.of(profile)
        if profile.model not in self.config.models or any(
            getattr(sent, f) != getattr(self.config, f) for f in _DESTINATION
        ):
            raise config_error(
                f"model provider {self.name!r} on this worker no longer allows the endpoint, "
                f"key variable or model {profile.model!r} this run was prepared with"
            )


def chosen_model(override: ModelOverride, models: Mapping[str, ModelClient]) -> ModelProfile:
    """The profile a work order's model choice resolves to on this worker, or a final refusal."""
    carried = override.legacy_fields()
    if carried:
        raise ApplicationError(
            f"the work order's model choice sets {', '.join(carried)}, which only the worker "
            "may: a run names a model provider configured there (AGENTLEDGER_MODEL_PROVIDERS)",
            type="ModelOverrideRefused",
            non_retryable=True,
        )
    provider = models.get(override.provider)
    if not isinstance(provider, ConfiguredProvider):
        configured = sorted(n for n, m in models.items() if isinstance(m, ConfiguredProvider))
        raise ApplicationError(
            f"no model provider {override.provider!r} is configured on this worker "
            f"(configured: {', '.join(configured) or 'none'})",
            type="UnknownModelProvider",
            non_retryable=True,
        )
    return provider.profile(override.model)
