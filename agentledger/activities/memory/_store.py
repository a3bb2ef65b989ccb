"""``MemoryStore``: the lifecycle persisted, on SQLite or PostgreSQL.

Each operation loads what it needs, asks ``domain.memory`` for the transition, and writes the
record, its events and the purge of every artifact derived from it in one transaction. A write
in a scope drops that scope's cached retrievals and summaries, so nothing stale is served.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, Engine, select, text

from agentledger.activities._sql import SqlStore
from agentledger.activities._terms import utc
from agentledger.activities.ledger import Ledger
from agentledger.activities.memory import _persist as db
from agentledger.activities.memory import _retrieve as read
from agentledger.activities.memory._retrieve import MemoryRetrieval
from agentledger.activities.memory._sealing import IN_CLEAR, MemorySeal
from agentledger.activities.memory._tables import records
from agentledger.domain.context import ContextItem
from agentledger.domain.memory import (
    Admission,
    MemoryCategory,
    MemoryEvent,
    MemoryProposal,
    MemoryRecord,
    Refused,
    Transition,
    admit,
    approve_and_publish,
    correct,
    delete,
    expire,
    revoke,
)
from agentledger.domain.principal import Principal


class DeletionReceipt(BaseModel):
    """What forgetting one memory purged. Content is named by hash only, never repeated."""

    model_config = ConfigDict(frozen=True)
    receipt_id: str
    memory_id: str
    deleted_by: str
    deleted_at: datetime
    purged_records: tuple[str, ...]
    content_hashes: tuple[str, ...]
    index_entries: int
    cache_entries: tuple[str, ...]
    summaries: tuple[str, ...]


class MemoryNotFound(LookupError):
    pass


class MemoryStore(SqlStore):
    """Open one per process over the ledger's engine (``of``: and its sealing); call ``install``
    once at start."""

    def __init__(self, engine: Engine, seal: MemorySeal = IN_CLEAR) -> None:
        super().__init__(engine)
        self._seal = seal

    @classmethod
    def of(cls, ledger: Ledger) -> MemoryStore:
        """Over ``ledger``'s engine, sealing what is about a subject as ``ledger`` seals runs."""
        return cls(ledger.engine, MemorySeal(ledger.sealer))

    # ------------------------------------------------------------- writing
    def propose(self, proposal: MemoryProposal, actor: Principal, now: datetime) -> Admission:
        """Admit through the lifecycle as far as policy allows. Idempotent on ``memory_id``."""
        with self._writer.begin() as conn:
            _lock(conn, proposal.scope.tenant_id)
            existing = db.load(conn, proposal.memory_id, self._seal)
            if existing is not None:
                return Admission(record=existing)
            published = self._published_claims(conn, proposal)
            admission = admit(proposal, actor, published, now)
            self._save(conn, admission.transitions)
        return admission

    def approve(self, memory_id: str, approver: Principal, now: datetime) -> Admission:
        """A curator's approval of a record that evaluation left for a person."""
        with self._writer.begin() as conn:
            admission = approve_and_publish(self._locked(conn, memory_id), approver, now)
            self._save(conn, admission.transitions)
        return admission

    def correct(
        self, memory_id: str, replacement: MemoryProposal, actor: Principal, now: datetime
    ) -> Admission:
        with self._writer.begin() as conn:
            old = self._locked(conn, memory_id)
            published = self._published_claims(conn, replacement)
            admission = correct(old, replacement, actor, published, now)
            self._save(conn, admission.transitions)
        return admission

    def revoke(
        self, memory_id: str, actor: Principal, reason: str, now: datetime
    ) -> Refused | None:
        with self._writer.begin() as conn:
            outcome = revoke(self._locked(conn, memory_id), actor, reason, now)
            if isinstance(outcome, Transition):
                self._save(conn, (outcome,))
        return outcome if isinstance(outcome, Refused) else None

    def expire_due(self, now: datetime) -> list[str]:
        """Record an ``expired`` event for every published memory past its expiry."""
        with self._writer.begin() as conn:
            rows = conn.execute(
                select(records.c.record).where(
                    records.c.state == "published", records.c.expires_at <= utc(now)
                )
            ).scalars()
            done = [
                t
                for r in db.load_many(conn, rows, self._seal)
                if isinstance(t := expire(r, now), Transition)
            ]
            self._save(conn, done)
        return [t.record.memory_id for t in done]

    def delete(self, memory_id: str, actor: Principal, now: datetime) -> DeletionReceipt | Refused:
        """Forget a memory and every earlier version it corrected, everywhere it was used."""
        with self._writer.begin() as conn:
            chain = self._chain(conn, self._locked(conn, memory_id))
            erased = [delete(r, actor, now) for r in chain if r.state != "deleted"]
            refused = next((e for e in erased if isinstance(e, Refused)), None)
            if refused is not None:
                return refused
            done = [e for e in erased if isinstance(e, Transition)]
            index = sum(db.save(conn, t, self._seal) for t in done)
            head = chain[0]
            caches, kept = db.purge_artifacts(
                conn, head.scope.tenant_id, head.scope.user_id, [r.memory_id for r in chain]
            )
            receipt = DeletionReceipt(
                receipt_id=f"del_{memory_id}",
                memory_id=memory_id,
                deleted_by=actor.user_id,
                deleted_at=now,
                purged_records=tuple(t.record.memory_id for t in done),
                content_hashes=tuple(t.record.content_hash for t in done),
                index_entries=index,
                cache_entries=tuple(caches),
                summaries=tuple(kept),
            )
            db.append_events(conn, [_receipt_event(receipt, now)])
        return receipt

    # ------------------------------------------------------------- reading
    def retrieve(
        self,
        principal: Principal,
        now: datetime,
        *,
        query: str = "",
        categories: tuple[MemoryCategory, ...] = (),
        limit: int = 50,
        use_cache: bool = True,
    ) -> MemoryRetrieval:
        """What ``principal`` may see now: hits, ``expired`` omissions, contradiction pairs."""
        key = read.cache_key(principal, query, categories, limit)
        if use_cache:
            with self._engine.connect() as conn:
                found = read.cached(conn, key, now, self._seal)
            if found is not None:
                return found
        if not use_cache:
            with self._engine.connect() as conn:
                return read.compute(conn, principal, now, query, categories, limit, self._seal)
        with self._writer.begin() as conn:
            # Shared with other readers, exclusive against lifecycle writes: a result computed
            # before a deletion can never be cached after it.
            _lock(conn, principal.tenant_id, shared=True)
            result = read.compute(conn, principal, now, query, categories, limit, self._seal)
            read.store(conn, key, principal, now, result, self._seal)
        return result

    def context_items(self, principal: Principal, now: datetime) -> list[ContextItem]:
        """Memory candidates for a packet; the context builder decides what each step needs."""
        return self.retrieve(principal, now).context_items()

    def search_unfiltered(self, query: str, *, limit: int = 10) -> int:
        """Every tenant and state on the same index: for benchmarks, never for a run."""
        with self._engine.connect() as conn:
            return len(read.search_all(conn, query, limit, self._seal))

    def get(self, memory_id: str) -> MemoryRecord | None:
        """Any record in any state, for audit (a deleted one is a tombstone without content)."""
        with self._engine.connect() as conn:
            return db.load(conn, memory_id, self._seal)

    def awaiting_review(self, tenant_id: str, limit: int = 200) -> list[MemoryRecord]:
        """The tenant's review queue: records held before publication (quarantined, classified,
        or evaluated and left for a person), oldest first."""
        held = ("quarantined", "classified", "evaluated")
        query = (
            select(records.c.record)
            .where(records.c.tenant_id == tenant_id, records.c.state.in_(held))
            .order_by(records.c.row_id)
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return db.load_many(conn, conn.execute(query).scalars(), self._seal)

    def history(self, memory_id: str) -> list[MemoryEvent]:
        with self._engine.connect() as conn:
            return db.history(conn, memory_id)

    # ------------------------------------------------------------- helpers
    def _locked(self, conn: Connection, memory_id: str) -> MemoryRecord:
        """Load, lock the record's tenant against concurrent cache fills, and load again."""
        found = db.load(conn, memory_id, self._seal)
        if found is None:
            raise MemoryNotFound(memory_id)
        _lock(conn, found.scope.tenant_id)
        again = db.load(conn, memory_id, self._seal)
        assert again is not None
        return again

    def _save(self, conn: Connection, transitions: Sequence[Transition]) -> None:
        for t in transitions:
            db.save(conn, t, self._seal)
            scope = t.record.scope
            db.purge_artifacts(conn, scope.tenant_id, scope.user_id, [t.record.memory_id])

    def _chain(self, conn: Connection, head: MemoryRecord) -> list[MemoryRecord]:
        chain = [head]
        while chain[-1].supersedes is not None and len(chain) < 100:
            older = db.load(conn, chain[-1].supersedes, self._seal)
            if older is None:
                break
            chain.append(older)
        return chain

    def _published_claims(self, conn: Connection, proposal: MemoryProposal) -> list[MemoryRecord]:
        """Published records in the proposal's scope that a contradiction could involve."""
        user = proposal.scope.user_id or ""
        rows = conn.execute(
            select(records.c.record)
            .where(*db.scope_filter(proposal.scope.tenant_id, user))
            .where(records.c.state == "published", records.c.claim_key.is_not(None))
        ).scalars()
        return db.load_many(conn, rows, self._seal)


def _lock(conn: Connection, tenant_id: str, *, shared: bool = False) -> None:
    """PostgreSQL only: SQLite's ``BEGIN IMMEDIATE`` already serialises these transactions."""
    if conn.dialect.name == "postgresql":
        fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        conn.execute(text(f"SELECT {fn}(:space, hashtext(:tenant))"), _lock_args(tenant_id))


def _lock_args(tenant_id: str) -> dict[str, object]:
    return {"space": 0x4D454D, "tenant": tenant_id}


def _receipt_event(receipt: DeletionReceipt, now: datetime) -> MemoryEvent:
    detail = receipt.model_dump(mode="json", exclude={"memory_id", "deleted_at"})
    return MemoryEvent(
        memory_id=receipt.memory_id, kind="purged", at=now, actor=receipt.deleted_by, detail=detail
    )
