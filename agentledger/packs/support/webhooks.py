"""The support pack's webhook sources: a helpdesk that posts each new ticket.

``POST /hooks/support/helpdesk`` with a signed ticket starts a run for the ticket's customer (a
directory user id; the source's configured tenant bounds whom it may name). A ticket that is
not open, or says nothing, starts no run.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentledger.packs.support.definition import pack
from agentledger.sdk import MappedOrder, PayloadRejected


class HelpdeskTicket(BaseModel):
    """What the helpdesk sends for a new ticket (extra fields it adds later are ignored)."""

    model_config = ConfigDict(extra="ignore")
    ticket_id: str = Field(min_length=1, max_length=100)
    customer_id: str = Field(min_length=1, max_length=200)
    status: Literal["open", "pending", "solved", "closed"]
    subject: str = Field("", max_length=300)
    text: str = Field(min_length=1, max_length=3_000)


@pack.webhook("helpdesk")
def from_ticket(ticket: HelpdeskTicket) -> MappedOrder:
    if ticket.status != "open":
        raise PayloadRejected(f"ticket {ticket.ticket_id} is {ticket.status}: only open tickets")
    request = (
        f"{ticket.subject.strip()}: {ticket.text.strip()}"
        if ticket.subject.strip()
        else ticket.text
    )
    return MappedOrder(request=request, requester=ticket.customer_id)
