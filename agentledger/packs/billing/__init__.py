"""The billing pack: subscription and billing support, built only through ``agentledger.sdk``.

Its system of record (subscriptions, invoices, credits, changes) is its own (``records``); read
tools verify a customer's subscriptions (``tools``); cancelling, pausing and prorated credits
wait for a billing lead's approval and are idempotent on the runtime's key (``write_tools``);
``billing-script`` decides deterministically from the packet (``script``).
"""

from __future__ import annotations

from agentledger.packs.billing import records, seed, tools, write_tools
from agentledger.packs.billing.definition import pack

__all__ = ["PACK"]

pack.install(records.install)
pack.seed(seed.seed)

PACK = pack.build()
"""``agentledger.packs.billing:PACK``, an ``agentledger.sdk.Pack``."""

_TOOL_MODULES = (tools, write_tools)  # imported for the tools they declare on ``pack``
