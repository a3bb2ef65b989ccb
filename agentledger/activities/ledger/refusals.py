"""Runs refused while their subject was being erased (``SubjectErased.refused``).

Such a run stores nothing in the ledger, but Temporal has its history: the work order it was
started with, sealed under the run's own payload key. The activity that met the refusal notes
the run here, in a transaction of its own once the refused one has rolled back; the erasure
waits for each noted run to close, destroys its payload key with the subject's keys and deletes
its history, as for the subject's stored runs. Only ids are kept, never content.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from agentledger.activities._sql import insert_for
from agentledger.activities.ledger._store import Ledger
from agentledger.activities.ledger._tables import refused_starts


def note(ledger: Ledger, refused: tuple[str, str, str]) -> None:
    """Keep ``(run_id, tenant_id, subject_id)`` for the erasure under way (once per run)."""
    run_id, tenant_id, subject_id = refused
    row = {"run_id": run_id, "tenant_id": tenant_id, "subject_id": subject_id,
           "refused_at": datetime.now(UTC)}  # fmt: skip
    with ledger.begin() as conn:
        conn.execute(insert_for(conn.dialect.name, refused_starts).on_conflict_do_nothing(), row)


def of_subject(ledger: Ledger, tenant_id: str, subject_id: str) -> tuple[str, ...]:
    """The subject's refused runs an erasure has not dealt with yet, oldest first."""
    query = (
        select(refused_starts.c.run_id)
        .where(refused_starts.c.tenant_id == tenant_id, refused_starts.c.subject_id == subject_id)
        .order_by(refused_starts.c.refused_at, refused_starts.c.run_id)
    )
    with ledger.engine.connect() as conn:
        return tuple(conn.execute(query).scalars())
