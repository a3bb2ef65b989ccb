"""What a ``ModelProfile``'s ``settings`` may say for an OpenAI-compatible endpoint.

The settings are frozen into the manifest, so they hold names, never secrets: the API key is read
at call time from the environment variable ``api_key_env`` names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentledger.activities.models._errors import config_error
from agentledger.activities.redaction import hold
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.model_profile import DEFAULT_CALL_SECONDS

StructuredOutput = Literal["json_schema", "json_object", "none"]
Api = Literal["chat_completions", "responses", "anthropic_messages"]
DecisionForm = Literal["json_schema", "tools"]


class ProviderSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    api: Api = "chat_completions"
    """The wire protocol, spoken through the provider's own SDK (``_sdk``)."""
    base_url: str = Field(pattern=r"^https?://")
    api_key_env: str | None = None
    api_key_header: str = "Authorization"
    timeout_seconds: float = Field(default=DEFAULT_CALL_SECONDS, gt=0)
    max_tokens: int = Field(default=1024, gt=0)
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    temperature: float | None = 0.0
    seed: int | None = None
    structured_output: StructuredOutput = "json_schema"
    strict_schema: bool = False
    max_string_length: int | None = Field(default=None, gt=0)
    native_tools: bool = True
    send_prompt_cache_key: bool = True
    stream: bool = False
    """Stream the reply, so an answer reaches the customer while it is written (the answer
    streams). Off unless configured: some compatible servers refuse streamed requests."""
    decisions: DecisionForm = "json_schema"
    """``tools``: every decision is a native tool call (each granted tool, and ``proceed``,
    ``ask_user``, the answer as tools of their own); ``json_schema``: a JSON object under the
    step's schema, with granted tools as native calls when ``native_tools``."""

    @classmethod
    def of(cls, profile: ModelProfile) -> ProviderSettings:
        try:
            return cls.model_validate(profile.settings)
        except ValidationError as exc:
            raise config_error(
                f"model profile {profile.name!r} has invalid provider settings: "
                f"{exc.error_count()} error(s), first: {exc.errors()[0]['loc']} "
                f"{exc.errors()[0]['msg']}"
            ) from None

    def api_key(self, environ: Mapping[str, str]) -> str | None:
        """The key; an unset variable is a configuration error (named, never printed)."""
        if self.api_key_env is None:
            return None
        key = environ.get(self.api_key_env)
        if not key:
            raise config_error(
                f"environment variable {self.api_key_env} (named by the model profile's "
                "api_key_env) is not set on this worker"
            )
        hold(key)  # whatever a provider echoes back is scrubbed of it
        return key

    @property
    def key_in_own_header(self) -> bool:
        """Azure's ``api-key`` and the like: the key goes in that header, not the SDK's own."""
        return self.api_key_header.lower() not in ("authorization", "x-api-key")
