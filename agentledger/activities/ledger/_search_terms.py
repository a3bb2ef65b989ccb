"""The runs search in a sealed ledger: a run's request words as keyed digests.

A sealed ledger stores a run's request text sealed under its subject's key, which a ``LIKE``
cannot read. So each run's distinct request words (``[a-z0-9]`` runs, lower-cased: "ORD_5101"
is the words ``ord`` and ``5101``) are stored beside it (``run_terms``) as HMAC-SHA256 digests
under the fleet's search key: made once, kept wrapped under the key ring (``search_keys``), so
the database alone tells no word, and the same for every tenant (a search may span sub-tenants).
A query's words are digested the same way and each must be among the run's. Erasure and
retention delete a run's digests with the rest of its content.
"""

from __future__ import annotations

import hmac
import re
from datetime import UTC, datetime

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Connection, select

from agentledger.activities._sql import insert_for
from agentledger.activities.ledger._ring import Ring
from agentledger.activities.ledger._tables import search_keys

KEY_ID = "search_v1"
DIGEST_CHARS = 32
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The words of ``text`` the search matches, each once, in order."""
    return list(dict.fromkeys(_WORD.findall(text.lower())))


class SearchTerms:
    """Digests words under the fleet's search key, read (or made) once per process."""

    def __init__(self, ring: Ring) -> None:
        self._ring = ring
        self._key: bytes | None = None

    def of(self, conn: Connection, text: str, *, make: bool) -> list[str] | None:
        """``text``'s words as ``run_terms`` holds them; ``None`` when there is no search key
        yet and ``make`` is false (then no run has digests: nothing can match)."""
        key = self._key or self._load(conn, make=make)
        if key is None:
            return None
        return [
            hmac.digest(key, word.encode(), "sha256").hex()[:DIGEST_CHARS] for word in words(text)
        ]

    def _load(self, conn: Connection, *, make: bool) -> bytes | None:
        query = select(search_keys.c.kek_id, search_keys.c.wrapped).where(
            search_keys.c.key_id == KEY_ID
        )
        row = conn.execute(query).first()
        if row is None:
            if not make:
                return None
            values = {
                "key_id": KEY_ID,
                **self._ring.wrapped(AESGCM.generate_key(bit_length=256), KEY_ID),
                "created_at": datetime.now(UTC),
            }
            statement = insert_for(conn.dialect.name, search_keys).on_conflict_do_nothing()
            conn.execute(statement.values(values))
            row = conn.execute(query).one()  # ours, or a concurrent first writer's
        self._key = self._ring.key(row.kek_id, row.wrapped, KEY_ID)
        return self._key
