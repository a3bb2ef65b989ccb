"""Content retention: a run's content shredded once it ended longer ago than its tenant keeps
content (``AGENTLEDGER_CONTENT_RETENTION``), by housekeeping's Temporal Schedule.

Shredding is an erasure of one run rather than of a subject (``activities.ledger.erasure``):
each event is sealed again under a key nobody keeps (one sealed under its subject's key is
opened first, since that key lives on for the subject's newer runs), what derives from the
content is deleted,
and the sweep is recorded in the erasure log (``erased_by`` ``retention``, no subject). The log
keeps each event's kind and digest, which ``verify`` checks.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from sqlalchemy import Connection, select

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._tables import erased_runs, erasures, runs
from agentledger.activities.ledger.erasure import drop_derived, shred_run
from agentledger.domain.retention import EVERY_TENANT
from agentledger.domain.state import ENDED

BATCH = 200
"""Runs shredded per tenant and firing at most: a backlog drains over several firings."""


def shred_expired(ledger: Ledger, retention: Mapping[str, int], now: datetime) -> int:
    """Shred every run that ended more than its tenant's days before ``now`` (``*``: the
    tenants not named); how many were shredded."""
    named = [tenant for tenant in retention if tenant != EVERY_TENANT]
    shredded = 0
    for tenant, days in retention.items():
        with ledger.begin() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("PRAGMA secure_delete = ON")
            found = _expired(conn, tenant, named, now - timedelta(days=days))
            for tenant_id, run_ids in found.items():
                _shred(ledger, conn, tenant_id, run_ids, days, now)
                shredded += len(run_ids)
    if shredded and ledger.engine.dialect.name == "sqlite":
        with ledger.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    return shredded


def _shred(
    ledger: Ledger,
    conn: Connection,
    tenant_id: str,
    run_ids: Sequence[str],
    days: int,
    now: datetime,
) -> None:
    erasure_id = f"era_{uuid.uuid4().hex[:16]}"
    events = sum(
        shred_run(conn, run_id, erasure_id, "not compared", ledger.open_stored)
        for run_id in run_ids
    )
    affected = {"runs": len(run_ids), "events": events, **drop_derived(conn, run_ids)}
    record = {"erasure_id": erasure_id, "tenant_id": tenant_id, "subject_digest": "",
              "erased_by": "retention", "erased_at": now, "affected": affected,
              "reason": f"content kept {days} days after the run ended"}  # fmt: skip
    conn.execute(erasures.insert().values(record))


def _expired(
    conn: Connection, tenant: str, named: Sequence[str], cutoff: datetime
) -> dict[str, list[str]]:
    """The tenant's (or, for ``*``, every unnamed tenant's) runs ended before ``cutoff`` and
    not yet shredded, by tenant."""
    of_tenant = (
        runs.c.tenant_id.not_in(named) if tenant == EVERY_TENANT else runs.c.tenant_id == tenant
    )
    query = (
        select(runs.c.tenant_id, runs.c.run_id)
        .where(
            of_tenant,
            runs.c.status.in_(sorted(ENDED)),
            runs.c.updated_at < cutoff,
            runs.c.run_id.not_in(select(erased_runs.c.run_id)),
        )
        .order_by(runs.c.updated_at)
        .limit(BATCH)
    )
    found: dict[str, list[str]] = defaultdict(list)
    for tenant_id, run_id in conn.execute(query):
        found[tenant_id].append(run_id)
    return found
