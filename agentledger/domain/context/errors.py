"""The one terminal outcome of context building.

    DomainError
     └── InsufficientContext (code "insufficient_context")
        a required item is missing, expired, unavailable, not allowed, or too large

The caller can retrieve narrower passages or ask the user; optional memory never fills the gap.
"""

from __future__ import annotations

from typing import Literal

from agentledger.domain._model import Frozen
from agentledger.domain.errors import DomainError

Problem = Literal["missing", "expired", "oversize", "unavailable", "not_allowed"]


class MissingContext(Frozen):
    """One unmet requirement: an item id, ``kind:<kind>``, or a fixed part such as ``tools``."""

    item: str
    problem: Problem
    estimated_tokens: int | None = None


class InsufficientContext(DomainError):
    code = "insufficient_context"

    def __init__(self, step: str, problems: tuple[MissingContext, ...]) -> None:
        self.step = step
        self.problems = problems
        listed = ", ".join(f"{p.item} ({p.problem})" for p in problems)
        super().__init__(f"{self.code} for step {step}: {listed}")

    def named(self, problem: Problem) -> tuple[str, ...]:
        return tuple(p.item for p in self.problems if p.problem == problem)

    @property
    def missing(self) -> tuple[str, ...]:
        return self.named("missing")

    @property
    def expired(self) -> tuple[str, ...]:
        return self.named("expired")

    @property
    def oversize(self) -> tuple[str, ...]:
        return self.named("oversize")
