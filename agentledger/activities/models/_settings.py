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

StructuredOutput = Literal["json_schema", "json_object", "none"]


class ProviderSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(pattern=r"^https?://")
    api_key_env: str | None = None
    api_key_header: str = "Authorization"
    timeout_seconds: float = Field(default=30.0, gt=0)
    max_tokens: int = Field(default=1024, gt=0)
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    temperature: float | None = 0.0
    seed: int | None = None
    structured_output: StructuredOutput = "json_schema"
    strict_schema: bool = False
    max_string_length: int | None = Field(default=None, gt=0)
    native_tools: bool = True
    send_prompt_cache_key: bool = True

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

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def auth_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """Headers carrying the key; an unset variable is a configuration error, not a retry."""
        if self.api_key_env is None:
            return {}
        key = environ.get(self.api_key_env)
        if not key:
            raise config_error(
                f"environment variable {self.api_key_env} (named by the model profile's "
                "api_key_env) is not set on this worker"
            )
        hold(key)  # whatever a provider echoes back is scrubbed of it
        if self.api_key_header.lower() == "authorization":
            return {"Authorization": f"Bearer {key}"}
        return {self.api_key_header: key}
