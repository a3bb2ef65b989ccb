"""Who hears about appended events: an observer the composition root installs (metrics).

Only events an append actually stored are reported. A retried activity or a replayed workflow
re-sends events the log already holds; the insert ignores them and so does the observer, so
nothing derived from it (a counter) can count an event twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import Connection, event, select

from agentledger.activities.ledger._codec import EncodedEvent
from agentledger.activities.ledger._tables import runs
from agentledger.domain.events import RunEvent

log = logging.getLogger(__name__)


class AppendObserver(Protocol):
    def appended(self, events: Sequence[RunEvent], seconds: float) -> None:
        """``events`` were newly stored (committed) by one append that took ``seconds``."""


class _Silent:
    def appended(self, events: Sequence[RunEvent], seconds: float) -> None:
        return None


SILENT: AppendObserver = _Silent()


def newly_stored(conn: Connection, encoded: list[EncodedEvent], inserted: int) -> list[RunEvent]:
    """Which of ``encoded`` the insert just stored, given that ``inserted`` of them were new.

    All or none is the usual answer. A batch that resends events an earlier attempt stored
    (``_core.resend``) is partly new: a run's stored events are always a prefix of its seqs
    (every batch carries each unacknowledged earlier event), so the new ones are those above
    the run's progress row, read here before this batch moves it.
    """
    if inserted == len(encoded):
        return [e.event for e in encoded]
    if inserted == 0:
        return []
    ids = {e.key[0] for e in encoded}
    query = select(runs.c.run_id, runs.c.last_seq).where(runs.c.run_id.in_(ids))
    stored = {run_id: last for run_id, last in conn.execute(query)}
    new = [e.event for e in encoded if e.key[1] > stored.get(e.key[0], 0)]
    if len(new) != inserted:
        log.warning(
            "an append stored %d events but %d lie above their runs' progress; the metrics "
            "report the latter",
            inserted,
            len(new),
        )
    return new


def notify(observer: AppendObserver, events: Sequence[RunEvent], seconds: float) -> None:
    """The events are committed whatever an observer does: its failure is logged, never
    raised (a raise would retry an append that can no longer report them)."""
    try:
        observer.appended(events, seconds)
    except Exception:
        log.exception("the append observer failed on %d events", len(events))


def notify_on_commit(
    conn: Connection, observer: AppendObserver, events: Sequence[RunEvent], seconds: float
) -> None:
    """``notify`` once the caller's transaction commits; a rollback first cancels it. With no
    observer installed there is nothing to defer (the two listeners cost ~0.07 ms a call)."""
    if observer is SILENT:
        return

    def committed(_conn: Connection) -> None:
        event.remove(conn, "rollback", rolled_back)
        notify(observer, events, seconds)

    def rolled_back(_conn: Connection) -> None:
        event.remove(conn, "commit", committed)

    event.listen(conn, "commit", committed, once=True)
    event.listen(conn, "rollback", rolled_back, once=True)
