"""Which model decides, with which settings: pinned into every attempt's manifest."""

from __future__ import annotations

from typing import Any

from pydantic import Field, JsonValue

from agentledger.domain._model import Frozen


class ModelCapabilities(Frozen):
    """What the provider behind a profile can do, declared by its kind when the profile is made
    and frozen with it, so a run keeps the protocol it started with after a worker upgrade."""

    native_tool_calls: bool = False
    json_schema_output: bool = False
    streaming: bool = False
    prompt_caching: bool = False
    reasoning_blocks: bool = False


class ModelProfile(Frozen):
    """Which model decides, with which settings. ``encoding`` selects the token counter."""

    name: str
    provider: str
    model: str
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    encoding: str = "cl100k_base"
    capabilities: ModelCapabilities | None = None
    """``None`` only in profiles frozen before capabilities were declared."""

    def canonical(self) -> dict[str, Any]:
        """The JSON digests are over. Fields added since are left out while unset, so profiles
        frozen before they existed keep their digests (manifest and packet hashes use them)."""
        optional = ("capabilities",)
        exclude = {name for name in optional if getattr(self, name) is None}
        return self.model_dump(mode="json", exclude=exclude or None)
