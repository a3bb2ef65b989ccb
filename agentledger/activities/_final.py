"""Ledger refusals that no retry can change, made final for Temporal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.exceptions import ApplicationError

from agentledger.activities.ledger import ContentErased, Ledger, SubjectErased, refusals


@contextmanager
def erased_is_final(ledger: Ledger | None = None) -> Iterator[None]:
    """A ledger write for a subject being erased (or whose key is gone) fails for good: nothing
    more of theirs is stored, and a retry would only loop until the run's time-out. A run whose
    start it refused is noted in ``ledger`` for the erasure (``refusals``)."""
    try:
        yield
    except (SubjectErased, ContentErased) as exc:
        if isinstance(exc, SubjectErased) and exc.refused is not None and ledger is not None:
            refusals.note(ledger, exc.refused)
        raise ApplicationError(str(exc), type=exc.code, non_retryable=True) from None
