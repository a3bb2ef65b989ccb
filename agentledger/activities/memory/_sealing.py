"""Memories about a customer sealed under the customer's own key, as their runs' events are.

A memory with a user (``scope.user_id``) is about that user, a subject of the ledger: with the
ledger sealed (``Ledger.sealer``), its stored record is an envelope under the subject's key
(``Sealer.subject_key``), and so are the retrievals cached for them and their profile summary.
The full-text index cannot read an envelope, so it is given the record's words as keyed digests
instead: each word stemmed (Snowball's English stemmer), then HMAC-SHA256 under an index key
derived from the subject key. A query's terms are digested the same way under the asking user's
key, so they find that user's memories and no one else's, and ranking (bm25 / ts_rank) works on
digests as on words. Tenant-wide memories (no user) are no one's personal data and stay in clear.

Erasure deletes the subject's memories (``_erasure``) and destroys the key: any copy left behind
(an old row version, a backup) is ciphertext and digests that no key opens or links any more.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson
import snowballstemmer
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection

from agentledger.activities._terms import STOPWORDS, WORD
from agentledger.activities.ledger import ContentErased, Sealer, SubjectErased, seal_envelope
from agentledger.domain.memory import MemoryRecord
from agentledger.domain.principal import Principal

INDEX_INFO = b"agentledger memory index v1"
DIGEST_CHARS = 20
_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def index_words(text: str) -> list[str]:
    """The words a query can name (``_terms.query_terms``' rule), each occurrence kept."""
    return [w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS]


@dataclass(frozen=True)
class _IndexKey:
    key: bytes

    def digest(self, word: str) -> str:
        """A word as the index holds it for this subject: one token, no letters of the word."""
        mac = hmac.digest(self.key, _stem(word).encode(), "sha256").hex()
        return f"m{mac[:DIGEST_CHARS]}"


def _index_key(subject_key: bytes) -> _IndexKey:
    return _IndexKey(hmac.digest(subject_key, INDEX_INFO, "sha256"))


@dataclass(frozen=True)
class MemorySeal:
    """How a memory store keeps content: in clear (``sealer=None``: the ledger is) or sealed."""

    sealer: Sealer | None = None

    def stored(
        self, conn: Connection, record: MemoryRecord, text: str, *, new: bool
    ) -> tuple[Any, str]:
        """The record as stored and what the full-text index is given for ``text`` (its words);
        ``new``: not stored before, so refused once an erasure of its subject has begun."""
        user = record.scope.user_id
        clear = record.model_dump(mode="json")
        if self.sealer is None or not user:
            return clear, text
        key_id, key = self.sealer.subject_key(conn, record.scope.tenant_id, user, new=new)
        index = _index_key(key)
        sealed = seal_envelope(AESGCM(key), key_id, orjson.dumps(clear)).decode()
        return sealed, " ".join(index.digest(w) for w in index_words(text))

    def opened(self, conn: Connection, values: Iterable[Any]) -> list[MemoryRecord]:
        """Stored records (clear ones as they are, envelopes opened) as records."""
        return [MemoryRecord.model_validate(v) for v in self._open(conn, list(values))]

    def search_terms(self, conn: Connection, principal: Principal, terms: list[str]) -> list[str]:
        """A query's terms as the index holds them: as typed (tenant-wide memories, and every
        memory of a ledger in clear), and digested under the asking user's key (theirs)."""
        if self.sealer is None or not terms:
            return terms
        held = self.sealer.held_subject_key(conn, principal.tenant_id, principal.user_id)
        if held is None:
            return terms
        index = _index_key(held[1])
        return terms + list(dict.fromkeys(index.digest(t) for t in terms))

    def sealing_for(self, conn: Connection, principal: Principal) -> Callable[[Any], Any] | None:
        """How what is derived for ``principal`` (a retrieval, a profile summary) is stored,
        their key read once for all of it (``None``: nothing is to be stored, their erasure
        has begun)."""
        if self.sealer is None:
            return _as_is
        try:
            key_id, key = self.sealer.subject_key(
                conn, principal.tenant_id, principal.user_id, new=True
            )
        except SubjectErased:
            return None
        cipher = AESGCM(key)
        return lambda payload: seal_envelope(cipher, key_id, orjson.dumps(payload)).decode()

    def opened_payload(self, conn: Connection, value: Any) -> Any:
        return self._open(conn, [value])[0]

    def _open(self, conn: Connection, values: list[Any]) -> list[Any]:
        at = [i for i, v in enumerate(values) if isinstance(v, str)]
        if not at:
            return values
        if self.sealer is None:
            raise ContentErased("a memory sealed under a subject key, read without the key ring")
        opened = self.sealer.open(conn, [values[i] for i in at])
        for i, text in zip(at, opened, strict=True):
            values[i] = orjson.loads(text)
        return values


def _as_is(payload: Any) -> Any:
    return payload


IN_CLEAR = MemorySeal()
"""A memory store over a ledger that stores in clear (opens nothing sealed)."""
