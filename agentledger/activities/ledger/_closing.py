"""What an erasure closes out beside the subject's stored runs, in its own transaction: the
schedules that ran as them (their requests blanked in the schedule journal) and the payload keys
of their other workflows (runs refused at their start, their schedules, the firings).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, select

from agentledger.activities.doors import forget_requests
from agentledger.activities.ledger._payload_keys import destroy_workflow_key
from agentledger.activities.ledger._tables import principals, refused_starts


def forget_schedules(conn: Connection, tenant_id: str, subject_id: str) -> dict[str, int]:
    """The requests of the schedules that ran as the subject, blanked in the schedule journal
    (a user id of the directory's, so only if the directory puts them in ``tenant_id``)."""
    directory = select(principals.c.tenant_id).where(principals.c.user_id == subject_id)
    if conn.execute(directory).scalar() not in (None, tenant_id):
        return {"schedule_entries": 0}
    return forget_requests(conn, subject_id)


def forget_workflows(
    conn: Connection, refused: Sequence[str], scheduled: Sequence[str]
) -> dict[str, int]:
    """Destroy the payload keys of the subject's other workflows, closed or deleted now, so
    what Temporal holds of them opens no more: ``refused``, the runs refused at their start
    while the erasure ran (``refusals``), and ``scheduled``, the subject's schedules (whose
    standing input holds their request) and the firings that started their runs."""
    for run_id in refused:
        destroy_workflow_key(conn, run_id)
    conn.execute(delete(refused_starts).where(refused_starts.c.run_id.in_(refused)))
    destroyed = sum(destroy_workflow_key(conn, workflow_id) for workflow_id in scheduled)
    return {"refused_runs": len(refused), "scheduled_keys": destroyed}
