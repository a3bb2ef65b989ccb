"""The envelope every run event shares: run id, sequence number, time, manifest hash and schema
version (``domain.events`` holds the catalogue)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from pydantic import Field, model_validator

from agentledger.domain._model import Frozen, without_field

SCHEMA_VERSION = 1


class Stamp(TypedDict):
    """The envelope fields of the next event of a run (``domain.steps.Recording.stamp``)."""

    run_id: str
    seq: int
    recorded_at: datetime
    manifest_hash: str


class Envelope(Frozen):
    run_id: str
    seq: int = Field(ge=1)
    recorded_at: datetime
    manifest_hash: str
    schema_version: int = SCHEMA_VERSION

    @model_validator(mode="before")
    @classmethod
    def _drop_causation_id(cls, data: Any) -> Any:
        """Events stored before ``causation_id`` was removed carry it (always null)."""
        return without_field(data, "causation_id")
