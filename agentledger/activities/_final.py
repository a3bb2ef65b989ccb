"""Ledger refusals that no retry can change, made final for Temporal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.exceptions import ApplicationError

from agentledger.activities.ledger import ContentErased, SubjectErased


@contextmanager
def erased_is_final() -> Iterator[None]:
    """A ledger write for a subject being erased (or whose key is gone) fails for good: nothing
    more of theirs is stored, and a retry would only loop until the run's time-out."""
    try:
        yield
    except (SubjectErased, ContentErased) as exc:
        raise ApplicationError(str(exc), type=exc.code, non_retryable=True) from None
