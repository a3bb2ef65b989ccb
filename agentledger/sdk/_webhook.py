"""``webhook``: a pack's mapping from one webhook source's payload to a run's work order.

::

    class Ticket(BaseModel):
        ticket_id: str
        customer_id: str
        text: str = Field(min_length=1)

    @pack.webhook("helpdesk")
    def from_ticket(ticket: Ticket) -> MappedOrder:
        if ticket.text.startswith("[auto]"):
            raise PayloadRejected("automatic replies start no run")
        return MappedOrder(request=ticket.text, requester=ticket.customer_id)

The payload model is the source's input schema: a payload it does not validate is rejected
before the mapper sees it, with the first error. Checked when declared: one parameter, annotated
with a pydantic model, returning ``MappedOrder``; anything else is a ``PackDefinitionError``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ValidationError

from agentledger.domain.webhooks import MappedOrder, PayloadRejected
from agentledger.sdk._errors import PackDefinitionError

_SOURCE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
Mapper = Callable[[Any], MappedOrder]


@dataclass(frozen=True)
class Webhook:
    """One source's mapping, checked: the pack's ``WebhookMapping`` port object."""

    source: str
    payload: type[BaseModel]
    mapper: Mapper

    def order_for(self, payload: object) -> MappedOrder:
        """The payload validated by the source's model, then mapped; ``PayloadRejected`` for
        one that does not validate or that the mapper refuses."""
        try:
            parsed = self.payload.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "payload"
            raise PayloadRejected(f"{where}: {first['msg']}") from None
        order = self.mapper(parsed)
        if not isinstance(order, MappedOrder):
            raise PayloadRejected(f"the {self.source} mapper returned no MappedOrder")
        return order

    @property
    def schema(self) -> dict[str, Any]:
        """The payload's JSON schema (what a sender must send)."""
        return self.payload.model_json_schema()


def webhook(source: str, mapper: Mapper, *, pack: str | None = None) -> Webhook:
    """Declare ``mapper`` as the mapping of ``source``'s payloads, checked now."""
    subject = f"webhook {source!r}"
    if not _SOURCE.match(source):
        raise PackDefinitionError(
            subject, "a source name is lower case letters, digits, - or _", pack=pack
        )
    try:
        hints = get_type_hints(mapper)
    except NameError as exc:
        raise PackDefinitionError(subject, f"unresolvable annotation: {exc}", pack=pack) from None
    params = list(inspect.signature(mapper).parameters)
    payload = hints.get(params[0]) if len(params) == 1 else None
    if not (isinstance(payload, type) and issubclass(payload, BaseModel)):
        raise PackDefinitionError(
            subject, "the mapper takes one parameter, annotated with a pydantic model", pack=pack
        )
    if hints.get("return") is not MappedOrder:
        raise PackDefinitionError(subject, "the mapper must return MappedOrder", pack=pack)
    return Webhook(source=source, payload=payload, mapper=mapper)
