"""Base classes shared by every domain value: frozen, strict about unknown fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """An immutable value. Unknown fields are an error, so typos never pass silently."""

    model_config = ConfigDict(frozen=True, extra="forbid")
