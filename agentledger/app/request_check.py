"""Requests refused before a run starts, for both faces: empty, or longer than the pack's
steps can hold (``domain.request_limit``), with the limit."""

from __future__ import annotations

from agentledger.app.registry import UnknownPack, get_pack
from agentledger.domain.context.tokens import counter_for_encoding
from agentledger.domain.request_limit import request_problem
from agentledger.domain.workorder import WorkOrder


def request_refusal(work_order: WorkOrder) -> str | None:
    """Why ``work_order``'s request is refused up front (``None``: it is not). A pack this
    process does not know is the run's to refuse, recorded."""
    try:
        profile = get_pack(work_order.pack).profile
    except UnknownPack:
        return None
    counter = counter_for_encoding(profile.model.encoding)
    return request_problem(work_order, profile, counter)
