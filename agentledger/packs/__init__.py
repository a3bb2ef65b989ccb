"""Domain packs: tools, policies, step profiles and a sample system of record per domain.

A pack is an ``agentledger.activities.ports.Pack``; the composition root's registry
(``agentledger.app.registry``) installs packs by name and hands them to the activities.
"""

from agentledger.activities.ports import Pack, UnknownPack

__all__ = ["Pack", "UnknownPack"]
