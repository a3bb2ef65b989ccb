"""The erasure log's reads: what an erasure recorded of a run, and the run's log as it stands,
by kinds and digests (readable with or without the content)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Text, cast, select

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._subjects import digest_of
from agentledger.activities.ledger._tables import erased_runs, erasures, run_events


@dataclass(frozen=True)
class ErasedRun:
    erasure_id: str
    erased_at: datetime
    erased_by: str
    events: int
    log_digest: str
    verified: str


def subject_digest(tenant_id: str, subject_id: str) -> str:
    return hashlib.sha256(f"{tenant_id}\0{subject_id}".encode()).hexdigest()


def erased_run(ledger: Ledger, run_id: str) -> ErasedRun | None:
    """The erasure a run's content went in, with the log digest recorded then."""
    query = (
        select(
            erasures.c.erasure_id,
            erasures.c.erased_at,
            erasures.c.erased_by,
            erased_runs.c.events,
            erased_runs.c.log_digest,
            erased_runs.c.verified,
        )
        .join(erasures, erasures.c.erasure_id == erased_runs.c.erasure_id)
        .where(erased_runs.c.run_id == run_id)
    )
    with ledger.engine.connect() as conn:
        row = conn.execute(query).first()
    return None if row is None else ErasedRun(*row)


def log_entries(ledger: Ledger, run_id: str) -> list[tuple[int, str, str]]:
    """The run's log as (seq, kind, digest of the event): readable with or without content."""
    with ledger.engine.connect() as conn:
        return [(seq, kind, digest_of(t)) for seq, kind, t in log_rows(conn, run_id)]


def log_digest(ledger: Ledger, run_id: str) -> tuple[int, str]:
    """How many events the run's log holds, and the digest over their seq, kind and digests."""
    entries = log_entries(ledger, run_id)
    return len(entries), run_digest(entries)


def log_rows(conn: Connection, run_id: str) -> list[tuple[int, str, str]]:
    """The run's stored events as (seq, kind, payload text), in order."""
    payload = cast(run_events.c.payload, Text)
    query = (
        select(run_events.c.seq, run_events.c.kind, payload)
        .where(run_events.c.run_id == run_id)
        .order_by(run_events.c.seq)
    )
    return [(seq, kind, t) for seq, kind, t in conn.execute(query)]


def run_digest(lines: Iterable[tuple[int, str, str]]) -> str:
    """The digest of a run's log: over each event's seq, kind and digest, in order."""
    hashed = hashlib.sha256()
    for seq, kind, digest in lines:
        hashed.update(f"{seq} {kind} {digest}\n".encode())
    return hashed.hexdigest()
