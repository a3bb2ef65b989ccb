"""Token budgets: an application limit below the provider's, split into section pools.

A pool per section stops optional chat history from eating the space that required evidence needs
(seed 000); each pool says what happens when it is full.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import model_validator

from agentledger.domain._model import Frozen

Pool = Literal["instructions", "working_state", "evidence", "conversation", "memory"]
POOLS: tuple[Pool, ...] = ("instructions", "working_state", "evidence", "conversation", "memory")

Overflow = Literal["stop", "compact", "narrow_or_stop", "drop_oldest", "drop_lowest_priority"]
"""``stop``: required text that does not fit fails the step. ``compact``: working state collapses
history into typed receipts first. ``narrow_or_stop``: the caller must retrieve narrower passages.
``drop_oldest``: older turns go first. ``drop_lowest_priority``: lowest-ranked items go first."""


class SectionBudget(Frozen):
    tokens: int
    on_overflow: Overflow


class TokenBudget(Frozen):
    """Section pools plus a safety margin, all inside ``application_limit < provider_limit``."""

    provider_limit: int
    application_limit: int
    safety_margin: int
    sections: dict[Pool, SectionBudget]

    @model_validator(mode="after")
    def _fits(self) -> TokenBudget:
        if self.application_limit >= self.provider_limit:
            raise ValueError("application_limit must stay below provider_limit")
        if set(self.sections) != set(POOLS):
            raise ValueError(f"sections must name exactly {POOLS}")
        reserved = sum(s.tokens for s in self.sections.values()) + self.safety_margin
        if reserved > self.application_limit:
            raise ValueError(f"sections + margin ({reserved}) exceed the application limit")
        return self

    @property
    def usable(self) -> int:
        return self.application_limit - self.safety_margin

    def with_sections(self, tokens: Mapping[Pool, int]) -> TokenBudget:
        """The same budget with some pools resized (a step profile's overrides); re-validated."""
        if not tokens:
            return self
        sections = {
            pool: s.model_copy(update={"tokens": tokens.get(pool, s.tokens)})
            for pool, s in self.sections.items()
        }
        return TokenBudget.model_validate({**self.model_dump(), "sections": sections})


SEED_TOKEN_BUDGET = TokenBudget(
    provider_limit=128_000,
    application_limit=12_000,
    safety_margin=1_000,
    sections={
        "instructions": SectionBudget(tokens=1_500, on_overflow="stop"),
        "working_state": SectionBudget(tokens=1_500, on_overflow="compact"),
        "evidence": SectionBudget(tokens=5_000, on_overflow="narrow_or_stop"),
        "conversation": SectionBudget(tokens=2_000, on_overflow="drop_oldest"),
        "memory": SectionBudget(tokens=1_000, on_overflow="drop_lowest_priority"),
    },
)
"""Seed 000's 12,000-token packet table, in the builder's five pools: the support pack's, and
the SDK's default for a pack that sizes none."""
