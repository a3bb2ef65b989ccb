"""The support agent's versioned profile (instructions, model, tool grants, steps, budgets), as
the pack declared in ``definition`` builds it."""

from __future__ import annotations

from agentledger.packs.support import PACK
from agentledger.packs.support.definition import INSTRUCTIONS, PLAYBOOK_MODEL

__all__ = ["INSTRUCTIONS", "PLAYBOOK_MODEL", "SUPPORT_PROFILE"]

SUPPORT_PROFILE = PACK.profile
