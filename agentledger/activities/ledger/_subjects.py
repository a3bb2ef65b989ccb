"""Crypto-shredding: every run's events sealed under its requester's own key.

A subject is a user of a tenant. Its data key (AES-256-GCM) is made on its first run, stored in
``subject_keys`` wrapped under the key ring's active key (the payload codec's ring, which lives
outside the database), and unwrapped on every read. A run's events are stored as envelopes::

    {"sealed": "<key id>", "sha256": "<hex of the event's exact JSON>", "data": "<base64>"}

The ``sha256`` is over exactly the bytes an unsealed ledger stores, so the log's structure and
every event's digest stay checkable after erasure destroys the key (``_erasure``). A ledger
without a ring (``Ledger.open`` alone, ``AGENTLEDGER_PAYLOAD_CODEC=off``) stores events in clear
and reads both forms; only a sealed event needs the ring.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection, bindparam, func, select

from agentledger.activities._sql import insert_for
from agentledger.activities.ledger._codec import EncodedEvent, PreEncoded
from agentledger.activities.ledger._errors import ContentErased, LedgerError, SubjectErased
from agentledger.activities.ledger._ring import NONCE, KeyWrap, Ring
from agentledger.activities.ledger._search_terms import SearchTerms
from agentledger.activities.ledger._tables import erased_runs, runs, subject_keys
from agentledger.domain.events import RunStarted

SEALED = '{"sealed":'
RUNS_CACHED = 4096


_KEY_STATE = (
    select(subject_keys.c.state)
    .where(subject_keys.c.key_id == bindparam("key_id"))
    .with_for_update(read=True)
)
"""A key's state, under a shared lock (a batch seals under one key or a few: one prepared
statement each, not an ``IN`` list compiled every time)."""

_WRAPPED = select(subject_keys.c.kek_id, subject_keys.c.wrapped).where(
    subject_keys.c.key_id == bindparam("key_id")
)
"""A key as stored (``wrapped`` null once destroyed). Built once: the statement's construction
costs ten times its execution, and every read of sealed content asks."""

_LIVE_KEY = select(
    subject_keys.c.key_id, subject_keys.c.state, subject_keys.c.kek_id, subject_keys.c.wrapped
).where(
    subject_keys.c.tenant_id == bindparam("tenant"),
    subject_keys.c.subject_id == bindparam("subject"),
    subject_keys.c.state != "erased",
)
"""The subject's key that no erasure has destroyed (at most one)."""


def subject_key_id(tenant_id: str, subject_id: str, generation: int) -> str:
    """The key id of a subject's ``generation``-th key (0 first; each erasure starts the next):
    concurrent first runs of one subject agree on it, and it names nobody."""
    digest = hashlib.sha256(f"{tenant_id}\0{subject_id}\0{generation}".encode()).hexdigest()
    return f"sk_{digest[:32]}"


def _usable(state: str | None, starting: bool) -> bool:
    """Whether a key in ``state`` seals a run's next event. Once an erasure begins, the
    subject's runs already stored may still record how they end (the erasure cancels them and
    waits), but no run of theirs starts; once it finishes, nothing is sealed under the key."""
    return state == "active" or (state == "erasing" and not starting)


def seal_envelope(cipher: AESGCM, key_id: str, body: bytes) -> PreEncoded:
    """``body`` (an event's exact JSON) sealed under ``key_id``'s ``cipher``, as stored."""
    nonce = os.urandom(NONCE)
    data = base64.b64encode(nonce + cipher.encrypt(nonce, body, key_id.encode())).decode()
    sha = hashlib.sha256(body).hexdigest()
    return PreEncoded(f'{SEALED}"{key_id}","sha256":"{sha}","data":"{data}"}}'.encode())


def digest_of(text: str) -> str:
    """The event's digest: from its envelope when sealed, else over its stored JSON."""
    if text.startswith(SEALED):
        return str(json.loads(text)["sha256"])
    return hashlib.sha256(text.encode()).hexdigest()


class Sealer:
    """Seals appended events and opens stored ones, with the subject keys in the ledger."""

    def __init__(self, wrap: KeyWrap, reload: Callable[[], KeyWrap] | None = None) -> None:
        """``reload``: the ring read again, when a subject key is wrapped under a ring key this
        process does not hold yet (another process rotated the ring first)."""
        self._ring = Ring(wrap, reload)
        self.search = SearchTerms(self._ring)
        self._by_run: dict[str, tuple[str, AESGCM]] = {}

    def seal(self, conn: Connection, encoded: Sequence[EncodedEvent]) -> list[tuple[Any, ...]]:
        """The rows to insert: each event's payload sealed under its run's subject key."""
        rows: list[tuple[Any, ...]] = []
        keys: dict[str, str] = {}
        starting: dict[str, tuple[str, str]] = {}
        for e in encoded:
            subject = None
            if isinstance(e.event, RunStarted):  # a new run: its subject's key, checked now
                principal = e.event.work_order.principal
                subject = starting[e.key[0]] = (principal.tenant_id, principal.user_id)
            key_id, cipher = self._key_of_run(conn, e.key[0], subject)
            keys[e.key[0]] = key_id
            rows.append((*e.row[:6], seal_envelope(cipher, key_id, bytes(e.body))))
        self._check_usable(conn, keys, starting)
        return rows

    def _check_usable(
        self, conn: Connection, keys: Mapping[str, str], starting: Mapping[str, tuple[str, str]]
    ) -> None:
        """Refuse the append where the database, not this process's cache, says a run's key
        may no longer seal (``_usable``). The keys are read under a shared lock, so an erasure
        that marks or destroys them waits for this append, and its log digest includes it."""
        states = {key: conn.scalar(_KEY_STATE, {"key_id": key}) for key in set(keys.values())}
        stale = sorted(
            run for run, key in keys.items() if not _usable(states.get(key), run in starting)
        )
        if stale:
            self.forget(stale)
            run = stale[0]
            refused = (run, *starting[run]) if run in starting else None
            raise SubjectErased(f"the subject of run {run} is being erased or was erased", refused)

    def open(self, conn: Connection, texts: Sequence[str]) -> list[str]:
        """The stored payloads in clear (``ContentErased`` if any was sealed under a key that
        is gone); the key state is read each time, so an erasure elsewhere is seen at once."""
        envelopes = {i: json.loads(t) for i, t in enumerate(texts) if t.startswith(SEALED)}
        if not envelopes:
            return list(texts)
        ciphers = self._ciphers(conn, {e["sealed"] for e in envelopes.values()})
        opened = list(texts)
        for i, envelope in envelopes.items():
            key_id = envelope["sealed"]
            raw = base64.b64decode(envelope["data"])
            try:
                clear = ciphers[key_id].decrypt(raw[:NONCE], raw[NONCE:], key_id.encode())
            except InvalidTag:
                raise LedgerError(
                    f"a stored event sealed under {key_id} fails authentication: it was altered"
                ) from None
            opened[i] = clear.decode()
        return opened

    def forget(self, run_ids: Sequence[str]) -> None:
        for run_id in run_ids:
            self._by_run.pop(run_id, None)

    def _ciphers(self, conn: Connection, key_ids: set[str]) -> dict[str, AESGCM]:
        ciphers = {}
        for key_id in key_ids:
            kek_id, wrapped = conn.execute(_WRAPPED, {"key_id": key_id}).first() or (None, None)
            if kek_id is None or wrapped is None:
                raise ContentErased(
                    f"content sealed under subject key {key_id}, which was destroyed by an erasure"
                )
            ciphers[key_id] = self._ring.cipher(kek_id, wrapped, key_id)
        return ciphers

    def seal_body(self, conn: Connection, run_id: str, body: bytes) -> PreEncoded:
        """A copy derived from a run's content (its context packet, a tool's full output)
        sealed under the run's key, as its events are: erasure leaves only ciphertext behind,
        in the table and in any old row version."""
        key_id, cipher = self._run_key(conn, run_id)
        self._check_usable(conn, {run_id: key_id}, {})
        return seal_envelope(cipher, key_id, body)

    def seal_text(self, conn: Connection, run_id: str, text: str) -> str:
        """A read model's copy of the run's content (its answer, an approval's arguments),
        sealed under the run's key, as stored; the append that carries it checked the key."""
        key_id, cipher = self._run_key(conn, run_id)
        return seal_envelope(cipher, key_id, text.encode()).decode()

    def read_models(self, conn: Connection) -> ReadModelSeal:
        """What the read models' writes on ``conn`` seal with."""
        return ReadModelSeal(self, conn)

    def _key_of_run(
        self, conn: Connection, run_id: str, starting: tuple[str, str] | None
    ) -> tuple[str, AESGCM]:
        """``starting``: the subject of a new run, whose key is checked now (refused while the
        subject is being erased, naming the run: ``SubjectErased.refused``)."""
        if starting is not None:
            try:
                self._by_run[run_id] = self._subject_key(conn, *starting, starting=True)
            except SubjectErased as exc:
                raise SubjectErased(str(exc), (run_id, *starting)) from None
        return self._run_key(conn, run_id)

    def _run_key(self, conn: Connection, run_id: str) -> tuple[str, AESGCM]:
        """The key of a run already started: cached, or its subject's looked up."""
        found = self._by_run.get(run_id)
        if found is None:
            if len(self._by_run) > RUNS_CACHED:
                self._by_run.clear()
            query = select(runs.c.tenant_id, runs.c.principal_id).where(runs.c.run_id == run_id)
            row = conn.execute(query).one_or_none()
            if row is None:
                raise SubjectErased(f"run {run_id} has no run_started to name its subject")
            erased = select(erased_runs.c.run_id).where(erased_runs.c.run_id == run_id)
            if conn.execute(erased).first() is not None:  # never a new key for a shredded run
                raise SubjectErased(f"run {run_id}'s content was erased: nothing more is stored")
            found = self._by_run[run_id] = self._subject_key(conn, *row, starting=False)
        return found

    def subject_key(
        self, conn: Connection, tenant_id: str, subject_id: str, *, new: bool
    ) -> tuple[str, bytes]:
        """The subject's live key for their content kept beside the log (memories about them),
        made on first use; refused once their erasure begins (for ``new`` content) or ends."""
        return self._subject_secret(conn, tenant_id, subject_id, starting=new)

    def held_subject_key(
        self, conn: Connection, tenant_id: str, subject_id: str
    ) -> tuple[str, bytes] | None:
        """The subject's key if they have one that an erasure has not destroyed; never made."""
        row = conn.execute(_LIVE_KEY, {"tenant": tenant_id, "subject": subject_id}).first()
        if row is None or row.wrapped is None:
            return None
        return row.key_id, self._ring.key(row.kek_id, row.wrapped, row.key_id)

    def _subject_key(
        self, conn: Connection, tenant_id: str, subject_id: str, *, starting: bool
    ) -> tuple[str, AESGCM]:
        key_id, key = self._subject_secret(conn, tenant_id, subject_id, starting=starting)
        return key_id, AESGCM(key)

    def _subject_secret(
        self, conn: Connection, tenant_id: str, subject_id: str, *, starting: bool
    ) -> tuple[str, bytes]:
        """The subject's live key, made on first use; refused where ``_usable`` says so."""
        live = {"tenant": tenant_id, "subject": subject_id}
        row = conn.execute(_LIVE_KEY, live).first()
        if row is None:
            of_subject = (subject_keys.c.tenant_id == tenant_id) & (
                subject_keys.c.subject_id == subject_id
            )
            erased = conn.execute(
                select(func.count()).select_from(subject_keys).where(of_subject)
            ).scalar_one()
            key_id = subject_key_id(tenant_id, subject_id, erased)
            key = AESGCM.generate_key(bit_length=256)
            values = {
                "key_id": key_id,
                "tenant_id": tenant_id,
                "subject_id": subject_id,
                "state": "active",
                **self._ring.wrapped(key, key_id),
                "created_at": datetime.now(UTC),
            }
            conn.execute(
                insert_for(conn.dialect.name, subject_keys).on_conflict_do_nothing().values(values)
            )
            row = conn.execute(_LIVE_KEY, live).one()  # ours, or a concurrent first run's
        key_id, state, kek_id, wrapped = row
        if not _usable(state, starting) or wrapped is None:
            raise SubjectErased(
                f"subject of tenant {tenant_id!r} is being erased: no new content is stored for it"
            )
        return key_id, self._ring.key(kek_id, wrapped, key_id)


@dataclass(frozen=True)
class ReadModelSeal:
    """The read models' copies of a run's content sealed under its key, and its request's words
    digested for the runs search (``_readmodel_writes.Seal``)."""

    sealer: Sealer
    conn: Connection

    def text(self, run_id: str, text: str) -> str:
        return self.sealer.seal_text(self.conn, run_id, text)

    def terms(self, text: str) -> list[str]:
        return self.sealer.search.of(self.conn, text, make=True) or []
