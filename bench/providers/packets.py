"""Real context packets for provider tests: seed 000's refund before and after verification."""

from __future__ import annotations

from functools import cache

from agentledger.domain.context import ContextPacket
from agentledger.packs.support.steps import CHOOSE_NEXT_ACTION, DRAFT_ANSWER
from bench import context_fixtures as cf


@cache  # packets are frozen; building one counts tokens, which is worth doing once
def choose_next_action() -> ContextPacket:
    return cf.build(CHOOSE_NEXT_ACTION, cf.state_before(), cf.candidates(cf.state_before()))


@cache
def draft_answer() -> ContextPacket:
    return cf.build(DRAFT_ANSWER, cf.state_after(), cf.candidates(cf.state_after()))
