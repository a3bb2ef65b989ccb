"""Erasing a subject's content from the ledger: crypto-shredding that leaves the audit checkable.

Two steps, around the application's work on Temporal (``app.erasure``):

``begin`` marks the subject's key ``erasing``, so no new run of the subject stores anything from
then on (``SubjectErased``), and names the subject's runs. ``finish``, in one transaction:

- seals every event of those runs still stored in clear under a throwaway key (never stored),
  and destroys the subject's keys: every event becomes an envelope no key opens, its ``sha256``
  over the event's exact JSON kept, so the log keeps its structure and digests; destroys each
  run's Temporal payload key (``_payload_keys``), so no copy of its history opens either;
- records each run's log digest (``erased_runs``), to be checked against later (``verify``);
- deletes what is derived from the content: packets, full tool outputs, answer streams, search
  digests, the subject's memories and memory caches; blanks the read models' text, idempotency
  keys and receipt ids, and the requests of the schedules that ran as the subject;
- destroys the payload keys of the subject's other workflows (``_closing``): runs refused at
  their start meanwhile, their schedules and the firings that started their runs;
- records the erasure (``erasures``): who, when, why, what was affected, the subject named by a
  digest only.

On SQLite the transaction runs with ``secure_delete`` and the WAL is checkpointed after it, so
the freed pages hold no byte of what was there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection, delete, func, select, union, update

from agentledger.activities.ledger import Ledger, LedgerError
from agentledger.activities.ledger._closing import forget_schedules, forget_workflows
from agentledger.activities.ledger._payload_keys import destroy_workflow_key
from agentledger.activities.ledger._subjects import (
    SEALED,
    digest_of,
    seal_envelope,
    subject_key_id,
)
from agentledger.activities.ledger._tables import (
    answer_chunks,
    answer_streams,
    approvals,
    context_packets,
    erased_runs,
    erasures,
    receipts,
    run_events,
    run_terms,
    runs,
    subject_keys,
    tool_outputs,
)
from agentledger.activities.ledger.erasure_log import log_rows, run_digest, subject_digest
from agentledger.activities.memory import forget_subject, subject_memories


class UnknownSubject(LedgerError):
    code = "unknown_subject"


class AlreadyErased(LedgerError):
    code = "already_erased"


@dataclass(frozen=True)
class Begun:
    tenant_id: str
    subject_id: str
    runs: tuple[str, ...]
    live: tuple[str, ...]
    """Runs still in flight: the application cancels them before ``finish``."""


@dataclass(frozen=True)
class Erased:
    erasure_id: str
    erased_at: datetime
    runs: tuple[str, ...]
    affected: Mapping[str, int]
    key_ids: tuple[str, ...] = ()
    """The subject keys destroyed (ids are digests: they name nobody)."""


def begin(ledger: Ledger, tenant_id: str, subject_id: str) -> Begun:
    """Stop the subject's content being stored; ``UnknownSubject``/``AlreadyErased`` when
    there is nothing of it to erase."""
    with ledger.begin() as conn:
        keys = _keys(conn, tenant_id, subject_id)
        live = {"active", "erasing"}
        if live & set(keys):  # first: it waits for appends that hold the key, then lists them
            conn.execute(_of_keys(tenant_id, subject_id, "active").values(state="erasing"))
        found = _subject_runs(conn, tenant_id, subject_id)
        if not found and not subject_memories(conn, tenant_id, subject_id) and not live & set(keys):
            if keys:
                raise AlreadyErased(f"{subject_id!r} of {tenant_id!r} is already erased")
            raise UnknownSubject(f"{tenant_id!r} has no run, memory or key of {subject_id!r}")
        if not live & set(keys):  # no key yet (runs stored in clear): a marker refuses new runs
            key_id = subject_key_id(tenant_id, subject_id, len(keys))
            row = {
                "key_id": key_id,
                "tenant_id": tenant_id,
                "subject_id": subject_id,
                "state": "erasing",
                "created_at": datetime.now(UTC),
            }
            conn.execute(subject_keys.insert().values(row))
    running = tuple(r for r, status in found if status in ("running", "awaiting_approval"))
    return Begun(tenant_id, subject_id, tuple(r for r, _ in found), running)


def finish(
    ledger: Ledger,
    begun: Begun,
    *,
    by: str,
    reason: str,
    verified: Mapping[str, str],
    refused: Sequence[str] = (),
    scheduled: Sequence[str] = (),
) -> Erased:
    """Shred, delete and record (see the module); ``verified`` says per run how it compared
    with Temporal's history just before (``matched``, ``differed`` or ``no history``); the
    payload keys of ``refused`` and ``scheduled`` go too (``_closing.forget_workflows``)."""
    erasure_id, now = f"era_{uuid.uuid4().hex[:16]}", datetime.now(UTC)
    with ledger.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA secure_delete = ON")
        tenant, subject = begun.tenant_id, begun.subject_id
        key_ids = _destroy_keys(conn, tenant, subject, now)  # first: see _destroy_keys
        events = sum(
            shred_run(conn, run_id, erasure_id, verified.get(run_id, "no history"))
            for run_id in begun.runs
        )
        affected = {
            "runs": len(begun.runs),
            "events": events,
            **drop_derived(conn, begun.runs),
            **forget_subject(conn, tenant, subject),
            **forget_schedules(conn, tenant, subject),
            **forget_workflows(conn, refused, scheduled),
        }
        record = {"erasure_id": erasure_id, "tenant_id": tenant, "erased_by": by,
                  "subject_digest": subject_digest(tenant, subject), "reason": reason,
                  "erased_at": now, "affected": affected}  # fmt: skip
        conn.execute(erasures.insert().values(record))
    _checkpoint(ledger)
    if ledger.sealer is not None:
        ledger.sealer.forget(begun.runs)
    return Erased(erasure_id, now, begun.runs, affected, key_ids)


def _checkpoint(ledger: Ledger) -> None:
    """SQLite: the WAL's copies of the old pages, gone."""
    if ledger.engine.dialect.name == "sqlite":
        with ledger.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


def unerased(
    ledger: Ledger, digest: str, key_ids: Collection[str], erased_at: datetime
) -> list[tuple[str, str]]:
    """The (tenant, subject) of ``digest`` (``subject_digest``) if this ledger still holds what
    an erasure at ``erased_at`` destroyed: one of ``key_ids`` undestroyed, or a run from before
    it not erased (a backup restored from before the erasure; one taken after the subject came
    back holds neither)."""
    candidates = union(
        select(runs.c.tenant_id, runs.c.principal_id).where(
            runs.c.created_at <= erased_at, runs.c.run_id.not_in(select(erased_runs.c.run_id))
        ),
        select(subject_keys.c.tenant_id, subject_keys.c.subject_id).where(
            subject_keys.c.key_id.in_(key_ids), subject_keys.c.state != "erased"
        ),
    )
    with ledger.engine.connect() as conn:
        found = {(tenant, subject) for tenant, subject in conn.execute(candidates)}
    return sorted(pair for pair in found if subject_digest(*pair) == digest)


def shred_run(
    conn: Connection,
    run_id: str,
    erasure_id: str,
    verified: str,
    opener: Callable[[Connection, list[str]], list[str]] | None = None,
) -> int:
    """Seal the run's events under a key nobody keeps (the clear ones; with ``opener``, the
    ones sealed under a subject key that lives on too); destroy its Temporal payload key; record
    its log digest. Each envelope keeps the digest of the event it holds, so the log digest does
    not change."""
    throwaway, key_id = AESGCM(AESGCM.generate_key(bit_length=256)), f"shredded_{erasure_id}"
    rows = log_rows(conn, run_id)
    sealed = [t for _, _, t in rows if t.startswith(SEALED)]
    opened = dict(zip(sealed, opener(conn, sealed), strict=True)) if opener and sealed else {}
    for seq, _, stored in rows:
        clear = opened.get(stored, stored)
        if clear.startswith(SEALED):
            continue  # its subject key is destroyed with this erasure
        envelope = seal_envelope(throwaway, key_id, clear.encode())
        of_row = (run_events.c.run_id == run_id) & (run_events.c.seq == seq)
        conn.execute(update(run_events).where(of_row).values(payload=envelope))
    digest = run_digest((seq, kind, digest_of(t)) for seq, kind, t in rows)
    record = {"run_id": run_id, "erasure_id": erasure_id, "events": len(rows),
              "log_digest": digest, "verified": verified}  # fmt: skip
    conn.execute(erased_runs.insert().values(record))
    destroy_workflow_key(conn, run_id)
    return len(rows)


def drop_derived(conn: Connection, run_ids: Sequence[str]) -> dict[str, int]:
    counts = {}
    for name, table in (
        ("packets", context_packets),
        ("tool_outputs", tool_outputs),
        ("answer_chunks", answer_chunks),
        ("answer_streams", answer_streams),
    ):
        counts[name] = conn.execute(delete(table).where(table.c.run_id.in_(run_ids))).rowcount
    conn.execute(delete(run_terms).where(run_terms.c.run_id.in_(run_ids)))  # the request's words
    conn.execute(
        update(runs)
        .where(runs.c.run_id.in_(run_ids))
        .values(request_text="", answer=None, failure_reason=None)
    )
    conn.execute(
        update(approvals).where(approvals.c.run_id.in_(run_ids)).values(arguments={}, reason=None)
    )
    conn.execute(  # keys and read receipts' ids are made of the call's arguments (an order id)
        update(receipts)
        .where(receipts.c.run_id.in_(run_ids))
        .values(idempotency_key=None, receipt_id=None)
    )
    return counts


def _destroy_keys(
    conn: Connection, tenant_id: str, subject_id: str, now: datetime
) -> tuple[str, ...]:
    """Destroy the subject's keys being erased; their ids. Done first in ``finish``: appends
    still sealing under one finish before it, and every later one is refused."""
    of_subject = (subject_keys.c.tenant_id == tenant_id) & (subject_keys.c.subject_id == subject_id)
    erasing = select(subject_keys.c.key_id).where(of_subject, subject_keys.c.state == "erasing")
    key_ids = tuple(conn.scalars(erasing))
    conn.execute(
        _of_keys(tenant_id, subject_id, "erasing").values(
            state="erased", kek_id=None, wrapped=None, erased_at=now
        )
    )
    return key_ids


def _keys(conn: Connection, tenant_id: str, subject_id: str) -> dict[str, int]:
    query = (
        select(subject_keys.c.state, func.count())
        .where(subject_keys.c.tenant_id == tenant_id, subject_keys.c.subject_id == subject_id)
        .group_by(subject_keys.c.state)
    )
    return {state: count for state, count in conn.execute(query)}


def _of_keys(tenant_id: str, subject_id: str, state: str) -> Any:
    return update(subject_keys).where(
        subject_keys.c.tenant_id == tenant_id,
        subject_keys.c.subject_id == subject_id,
        subject_keys.c.state == state,
    )


def _subject_runs(conn: Connection, tenant_id: str, subject_id: str) -> list[tuple[str, str]]:
    query = select(runs.c.run_id, runs.c.status).where(
        runs.c.tenant_id == tenant_id,
        runs.c.principal_id == subject_id,
        runs.c.run_id.not_in(select(erased_runs.c.run_id)),
    )
    return [(r, s) for r, s in conn.execute(query.order_by(runs.c.created_at))]
