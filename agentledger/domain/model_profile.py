"""Which model decides, with which settings: pinned into every attempt's manifest."""

from __future__ import annotations

from pydantic import Field, JsonValue

from agentledger.domain._model import Frozen


class ModelProfile(Frozen):
    """Which model decides, with which settings. ``encoding`` selects the token counter."""

    name: str
    provider: str
    model: str
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    encoding: str = "cl100k_base"
