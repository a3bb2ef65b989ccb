"""Typed errors raised by the pure core.

Expected business outcomes (a denial, a rejected approval) are events, not exceptions. These
errors mean the inputs themselves are inconsistent::

    DomainError
     ├── FoldError                 an event cannot be applied to the state
     │    ├── ForeignEvent         it belongs to another run
     │    ├── OutOfOrderEvent      its seq is not the next one
     │    ├── EventAfterEnd        the run already completed or failed
     │    └── InconsistentEvent    it contradicts the state (unknown approval, digest mismatch)
     ├── ManifestError             a profile cannot be resolved into a manifest
     ├── UnsupportedSchemaVersion  a stored event is newer than this build (domain.upcasting)
     ├── CompactionNotAllowed      compaction asked for mid-operation (domain.compaction)
     └── InsufficientContext       a step's required context is missing (domain.context)

The last three live beside the code that raises them; every one carries a stable ``code``.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base of every error the pure core raises. ``code`` is stable and machine-readable."""

    code = "domain_error"


class FoldError(DomainError):
    code = "fold_error"


class ForeignEvent(FoldError):
    code = "foreign_event"


class OutOfOrderEvent(FoldError):
    code = "out_of_order_event"


class EventAfterEnd(FoldError):
    code = "event_after_end"


class InconsistentEvent(FoldError):
    code = "inconsistent_event"


class ManifestError(DomainError):
    code = "manifest_error"
