"""Base classes shared by every domain value: frozen, strict about unknown fields."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict

_new = object.__new__
_set = object.__setattr__  # frozen models refuse their own __setattr__


class Frozen(BaseModel):
    """An immutable value. Unknown fields are an error, so typos never pass silently."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """Build from values that were validated already (fields of a stored event).

        The fold builds several records per event; skipping re-validation keeps ``project()``
        within a small multiple of merely reading the events. Every field must be given.
        """
        if len(values) != len(cls.__pydantic_fields__):
            missing = cls.__pydantic_fields__.keys() - values.keys()
            raise TypeError(f"{cls.__name__}.trusted() needs every field; missing {missing}")
        obj = _new(cls)
        _set(obj, "__dict__", values)
        _set(obj, "__pydantic_fields_set__", set(values))
        _set(obj, "__pydantic_extra__", None)
        _set(obj, "__pydantic_private__", None)
        return obj


def without_field(data: Any, name: str) -> Any:
    """``data`` without the key ``name``, for a ``mode="before"`` validator of a removed field.

    Stored events and recorded histories keep the fields they were written with; a field removed
    from a model is dropped on read, while every other unknown field is still refused.
    """
    if isinstance(data, dict) and name in data:
        return {k: v for k, v in data.items() if k != name}
    return data
