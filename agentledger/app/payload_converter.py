"""The data converter every client and worker connects with: pydantic, and the payload codec.

The codec is bound to the workflow whose payload it seals (``EncryptionCodec.with_context``), so
the SDK asks the converter for a bound copy at every workflow activation, activity task and
command that carries payloads. ``DataConverter.with_context`` makes that copy with
``dataclasses.replace``, which runs ``__post_init__`` again: a new payload converter and failure
converter built and dropped each time, which cost more than sealing the payloads. This converter
binds the same components in a shallow copy instead, and keeps the copies of its last contexts:
the SDK asks again for the same context (a workflow's, at each activation and command).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Self

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, SerializationContext, WithSerializationContext

from agentledger.app.config import Settings
from agentledger.app.payloads import payload_codec

_BOUND = ("payload_converter", "payload_codec", "failure_converter", "external_storage")
"""The components ``DataConverter.with_context`` binds to a context."""
CONTEXTS_KEPT = 1024


@dataclass(frozen=True)
class BindingConverter(DataConverter):
    """A ``DataConverter`` whose copy bound to a context shares its unbound parts."""

    _bound: dict[SerializationContext, Self] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def with_context(self, context: SerializationContext) -> Self:
        found = self._bound.get(context)
        if found is None:
            if len(self._bound) >= CONTEXTS_KEPT:
                self._bound.clear()
            found = self._bound[context] = self._bind(context)
        return found

    def _bind(self, context: SerializationContext) -> Self:
        parts = {name: getattr(self, name) for name in _BOUND}
        bound = {
            name: part.with_context(context) if isinstance(part, WithSerializationContext) else part
            for name, part in parts.items()
        }
        if all(bound[name] is parts[name] for name in _BOUND):
            return self
        copied = copy.copy(self)
        object.__setattr__(copied, "_bound", {})
        for name, part in bound.items():
            object.__setattr__(copied, name, part)
        return copied


def data_converter(settings: Settings) -> DataConverter:
    """The pydantic converter, with the payload codec unless it is off."""
    codec = payload_codec(settings)
    if codec is None:
        return pydantic_data_converter
    fields = {
        f.name: getattr(pydantic_data_converter, f.name)
        for f in dataclasses.fields(DataConverter)
        if f.init
    }
    return BindingConverter(**{**fields, "payload_codec": codec})
