"""Errors the ledger raises. Everything else from the database is a bug and propagates as is::

    LedgerError
     ├── LedgerConflict       another payload is already stored at (run_id, seq)
     ├── LedgerGap            the batch would leave a hole: the event before its first is missing
     ├── PayloadRejected      a payload the ledger refuses to store (nothing was written)
     │    ├── PayloadTooLarge the encoded payload exceeds the configured limit
     │    └── SubjectErased   the subject is being erased, or its key is gone
     ├── ContentErased        what was asked for is sealed under a key that is gone
     └── LedgerUnavailable    the database cannot be reached or stayed busy; retrying may succeed

``LedgerConflict`` and ``PayloadRejected`` are deterministic: retrying the same call fails the
same way. ``LedgerUnavailable`` is transient, and so is ``LedgerGap``: the missing events are on
their way in another batch (a killed worker's append waiting for its retry), and once they land
the same call succeeds.
"""

from __future__ import annotations


class LedgerError(Exception):
    """Base of every error the ledger raises. ``code`` is stable and machine-readable."""

    code = "ledger_error"


class LedgerConflict(LedgerError):
    """A different event is already stored at ``(run_id, seq)``: someone else appended first."""

    code = "ledger_conflict"

    def __init__(self, run_id: str, seq: int, detail: str = "") -> None:
        self.run_id = run_id
        self.seq = seq
        self.detail = detail
        message = f"run {run_id} already has a different event at seq {seq}"
        super().__init__(f"{message}: {detail}" if detail else message)

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the error picklable across process boundaries despite the custom signature.
        return (type(self), (self.run_id, self.seq, self.detail))


class LedgerGap(LedgerError):
    """Appending would store ``seq`` while ``seq - 1`` of the run is not stored: refused, so no
    reader ever sees a hole in a run's log."""

    code = "ledger_gap"

    def __init__(self, run_id: str, seq: int) -> None:
        self.run_id = run_id
        self.seq = seq
        super().__init__(
            f"run {run_id}: seq {seq} would follow a missing seq {seq - 1}; "
            "the append is refused until the events before it are stored"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.run_id, self.seq))


class PayloadRejected(LedgerError):
    code = "payload_rejected"


class PayloadTooLarge(PayloadRejected):
    code = "payload_too_large"

    def __init__(self, what: str, size: int, limit: int) -> None:
        self.what = what
        self.size = size
        self.limit = limit
        super().__init__(
            f"{what} encodes to {size:,} bytes, over the ledger limit of {limit:,}; "
            "store large content by hash (tool output, packet) and reference it from the event"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.what, self.size, self.limit))


class LedgerUnavailable(LedgerError):
    code = "ledger_unavailable"


class SubjectErased(PayloadRejected):
    """The run's subject is being erased, or its key is gone: nothing more is stored for it."""

    code = "subject_erased"

    def __init__(self, message: str, refused: tuple[str, str, str] | None = None) -> None:
        super().__init__(message)
        self.refused = refused
        """``(run_id, tenant_id, subject_id)`` of a run whose start this refused."""

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.refused))


class ContentErased(LedgerError):
    """The content asked for was sealed under a subject key that erasure destroyed (or that this
    process's key ring cannot unwrap): only its structure and digests remain."""

    code = "content_erased"
